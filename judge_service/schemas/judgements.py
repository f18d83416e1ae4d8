"""A stored judgement (GET /v1/judgements/{id}): the response plus what produced it, its canaries, and
reasons written afterwards."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from judge_service.schemas.canaries import CanaryKind
from judge_service.schemas.common import ResponseModel, Usage
from judge_service.schemas.comparison import ComparisonRecord
from judge_service.schemas.judge import AnswerResult, JudgeRequest, JudgeResponse
from judge_service.schemas.jury import JurorRecord
from judge_service.schemas.thinking import ThinkingAttempt


class CanaryResult(AnswerResult):
    """A canary answer as the graders judged it (watch/canaries.py): kept with the stored judgement only."""

    kind: CanaryKind
    text: str
    outranked: bool | None = Field(
        description="The canary scored above the median of the group's scored answers: the judge preferred "
        "a planted bad answer to half the group. Null when the canary or every answer is unscored."
    )
    shown_at: list[int] | None = Field(
        default=None,
        description="Its place in each answer order the judge saw (from 0); `answer_orders` leaves it out. "
        "Null for graders that were not shown the group.",
    )


class ExplainedReasons(ResponseModel):
    """Reasons written after the judgement for its marks (POST /v1/judgements/{id}/reasons): the judge is
    shown its own prompt and marks and asked why; the marks and scores never change."""

    answers: dict[str, dict[str, str]] = Field(
        description="Answer id -> criterion -> the reason for the mark the judgement gave."
    )
    failures: dict[str, str] = Field(
        default_factory=dict, description="Answer id -> why no reasons were written for it."
    )
    judge_model: str
    prompt_version: str = Field(description="The version of the prompt that asked for the reasons.")
    usage: Usage
    created_at: datetime


class StoredJudgement(JudgeResponse):
    """What GET /v1/judgements/{id} returns: the result plus what produced it."""

    request: JudgeRequest
    raw_outputs: list[str] = Field(description="The judge's raw text, one entry per attempt.")
    thinking: list[ThinkingAttempt] | None = Field(
        default=None,
        description="A thinking judge's thinking, one entry per attempt beside raw_outputs; null when the "
        "judge did not think.",
    )
    canaries: list[CanaryResult] | None = Field(
        default=None,
        description="The canary answers judged with the group (never among `answers`); null when none.",
    )
    explained: ExplainedReasons | None = Field(
        default=None,
        description="Reasons written afterwards for a judgement made without them (POST "
        "/v1/judgements/{id}/reasons), kept apart from the judge's reply; null until asked.",
    )
    caller: str | None = Field(
        default=None,
        description="The name of the API key that asked for it (never the key); null without API keys.",
    )
    comparisons: list[ComparisonRecord] | None = Field(
        default=None, description="Every comparison a comparison grader made; null for other graders."
    )
    jury: list[JurorRecord] | None = Field(
        default=None, description="Under the jury grader: what each judge did, with its raw outputs."
    )

    def response(self) -> JudgeResponse:
        """The reply to the caller: everything but the request and the raw outputs. Built from the
        already-validated field values (no dump and re-validation of the whole tree)."""
        fields = JudgeResponse.model_fields
        return JudgeResponse.model_validate({name: getattr(self, name) for name in fields})
