"""Judging one group (POST /v1/judge) or a batch of them (POST /v1/judge/batch): the request, the
judge's options, and the response."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from judge_service.schemas.canaries import CANARIES_DESCRIPTION, Canaries
from judge_service.schemas.cascade import CASCADE_DESCRIPTION, CascadeOptions, CascadePath, ScoredBy
from judge_service.schemas.common import (
    ITEM_DESCRIPTION,
    MAX_ANSWERS,
    MAX_BATCH_GROUPS,
    MAX_ORDERS,
    MAX_STEP,
    MAX_TEXT_CHARS,
    REFERENCE_DESCRIPTION,
    RUN_ID_PATTERN,
    Item,
    ResponseModel,
    StrictModel,
    Text,
    Usage,
    _refuse_duplicates,
)
from judge_service.schemas.comparison import COMPARISON_DESCRIPTION, ComparisonOptions, ComparisonTally
from judge_service.schemas.errors import ErrorBody
from judge_service.schemas.graders import GraderTerm
from judge_service.schemas.jury import JURY_DESCRIPTION, AnswerJury, JuryOptions
from judge_service.schemas.messages import (
    MAX_TOOLS,
    TOOLS_DESCRIPTION,
    Answer,
    ChatMessage,
    Tool,
    check_structure,
)
from judge_service.schemas.rubrics import (
    MAX_CRITERIA,
    RUBRIC_DESCRIPTION,
    RUBRIC_REF_PATTERN,
    Criterion,
    RubricUse,
    _check_criteria,
)
from judge_service.schemas.rules import RuleOptions
from judge_service.schemas.thinking import (
    REASONING_EFFORT_DESCRIPTION,
    THINKING_DESCRIPTION,
    ReasoningEffort,
    Thinking,
)

# How the judge decodes a group (judging/llm/caller.py) and what a criterion's score is made from.
Decoding = Literal["group", "per_answer"]
ScoreFrom = Literal["mark", "expected"]
DECODING_DESCRIPTION = (
    "How the judge decodes the group: 'group', one reply marking every answer; 'per_answer', one reply "
    "per answer, each from a prompt showing the whole group (lower latency: the replies decode side by "
    "side over one shared prompt prefix). Default: JUDGE_DECODING."
)
SCORE_FROM_DESCRIPTION = (
    "What a criterion's score is made from: 'mark', the integer mark; 'expected', the judge's "
    "probability-weighted mark, which breaks ties between equal integer marks (the integer mark stands "
    "in where the judge backend gives no log-probabilities). Default: JUDGE_SCORE_FROM."
)
Reasons = Literal["inline", "none", "sample"]

REASONS_DESCRIPTION = (
    "Whether the judge writes a reason before each mark: 'inline' (it does), 'none' (marks only: far fewer "
    "tokens; reasons can be written later, POST /v1/judgements/{id}/reasons), 'sample' (inline for a "
    "seeded share of groups, JUDGE_REASON_SAMPLE_RATE, none for the rest). Default: JUDGE_REASONS."
)

Attribution = Literal["steps"]
ATTRIBUTION_DESCRIPTION = (
    "'steps': for each answer given as a trajectory (`messages`) and each criterion, the judge also names "
    "the steps its mark rests on and the first step that went wrong, if any (the turns' numbers, 1 for the "
    "answer's first message), returned as each criterion's `steps` and `first_wrong_step`. Needs the "
    "judge's reasons ('inline') and at least one trajectory; an answer given as text has no steps. "
    "client.step_weights turns them into per-step weights. Default: none."
)

ReasonLanguage = Literal["auto", "en", "de", "fr", "es", "it", "nl", "pt"]
REASON_LANGUAGE_DESCRIPTION = (
    "The language the judge writes its reasons in: a language code, or 'auto' for the conversation's "
    "language (told by its common words; none told: no instruction). Unset: JUDGE_REASON_LANGUAGE, by "
    "default none (the judge's own choice, as before this option existed)."
)


class JudgeRequest(StrictModel):
    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    reference: Text | None = Field(default=None, max_length=MAX_TEXT_CHARS, description=REFERENCE_DESCRIPTION)
    answers: list[Answer] = Field(min_length=1, max_length=MAX_ANSWERS)
    tools: list[Tool] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TOOLS,
        description=TOOLS_DESCRIPTION,
    )
    criteria: list[Criterion] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CRITERIA,
        description="Default: correctness, helpfulness, tone, format.",
    )
    rubric: str | None = Field(default=None, pattern=RUBRIC_REF_PATTERN, description=RUBRIC_DESCRIPTION)
    grader: str = Field(default="judge", min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(
        default=None, min_length=1, max_length=8, description="Weighted custom blend; overrides `grader`."
    )
    options: RuleOptions = Field(default_factory=RuleOptions)
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    group_key: Text | None = Field(default=None, max_length=256)
    seed: int | None = Field(
        default=None, ge=0, le=2**32 - 1, description="Seeds the shuffled answer order; default: from the id."
    )
    orders: int = Field(
        default=1,
        ge=1,
        le=MAX_ORDERS,
        description="Judge under this many answer orders and average (position bias).",
    )
    decoding: Decoding | None = Field(default=None, description=DECODING_DESCRIPTION)
    score_from: ScoreFrom | None = Field(default=None, description=SCORE_FROM_DESCRIPTION)
    reason_language: ReasonLanguage | None = Field(default=None, description=REASON_LANGUAGE_DESCRIPTION)
    reasons: Reasons | None = Field(default=None, description=REASONS_DESCRIPTION)
    attribution: Attribution | None = Field(default=None, description=ATTRIBUTION_DESCRIPTION)
    thinking: Thinking | None = Field(default=None, description=THINKING_DESCRIPTION)
    reasoning_effort: ReasoningEffort | None = Field(default=None, description=REASONING_EFFORT_DESCRIPTION)
    item: Item | None = Field(default=None, description=ITEM_DESCRIPTION)
    canaries: Canaries | None = Field(default=None, description=CANARIES_DESCRIPTION)
    comparison: ComparisonOptions | None = Field(default=None, description=COMPARISON_DESCRIPTION)
    cascade: CascadeOptions | None = Field(default=None, description=CASCADE_DESCRIPTION)
    jury: JuryOptions | None = Field(default=None, description=JURY_DESCRIPTION)

    @model_validator(mode="after")
    def _unique_ids(self) -> JudgeRequest:
        # Criteria beside a rubric are refused where the rubric is applied (service/rubrics.py): a judged
        # request holds both, the rubric and the items it was judged on.
        _refuse_duplicates("answer id", [a.id for a in self.answers])
        _check_criteria(self.criteria, None)
        check_structure(self.conversation, self.answers, self.tools)
        if self.attribution is not None and all(a.messages is None for a in self.answers):
            raise ValueError(
                "attribution 'steps' names steps of trajectories, and every answer is text: give the answers "
                "as `messages`, or leave attribution out"
            )
        return self

    @property
    def structured(self) -> bool:
        """Whether the group holds more than text: tools, tool turns, or an answer's trajectory."""
        return (
            self.tools is not None
            or any(a.messages is not None for a in self.answers)
            or any(m.structured for m in self.conversation)
        )


class StepAttribution(ResponseModel):
    steps: list[int] = Field(
        description="The steps (the answer's turns, from 1) the judge says the mark rests on; empty for an "
        "answer given as text."
    )
    first_wrong_step: int | None = Field(
        description="The first step the judge says went wrong for this criterion; null where none did."
    )


class CriterionMark(ResponseModel):
    mark: int | None = Field(ge=1, le=5, description="The 1-5 mark; null for a binary item (see `met`).")
    expected_mark: float | None = Field(
        default=None,
        ge=1,
        le=5,
        description="The judge's probability-weighted mark over 1-5; null where the judge backend gave no "
        "log-probabilities (the answer's explanation says why when it mattered).",
    )
    met: bool | None = Field(
        default=None, description="A binary item: whether the judge says the answer meets it; else null."
    )
    met_probability: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="A binary item: the judge's probability of 'met' from its log-probabilities; null "
        "where there were none.",
    )
    score: float = Field(
        ge=0,
        le=1,
        description="(mark - 1) / 4, or (expected_mark - 1) / 4 when scored from expected marks; a binary "
        "item: 1 if met else 0, or met_probability. A pitfall's score is how surely it was met: it counts "
        "against the answer.",
    )
    reason: str | None = Field(
        description="The judge's reason, written before the mark; null when judged with reasons 'none' "
        "(the stored judgement's `explained` holds reasons written afterwards)."
    )
    kind: str | None = Field(default=None, description="The criterion's kind, for checklist items.")
    attribution: StepAttribution | None = Field(
        default=None,
        description="With attribution 'steps': where in the answer's trajectory the mark comes from; null "
        "without it.",
    )


class TermScore(ResponseModel):
    grader: str
    weight: float
    score: float | None = Field(description="null when the term did not apply or failed")
    explanation: str
    details: dict[str, Any] | None = Field(
        default=None,
        description="Fields a code grader returned beside its score (explanations; they never change it).",
    )


AnswerStatus = Literal["scored", "unscored"]
GroupStatus = Literal["ok", "partial", "failed"]


class AnswerResult(ResponseModel):
    id: str
    status: AnswerStatus
    score: float | None = Field(description="Overall 0-1; null when unscored (never 0 for a failure).")
    criteria: dict[str, CriterionMark] | None = None
    terms: list[TermScore] | None = None
    explanation: str | None = None
    error: str | None = Field(default=None, description="Why the answer is unscored.")
    comparison: ComparisonTally | None = Field(
        default=None, description="Wins, losses and ties under a comparison grader; null otherwise."
    )
    scored_by: ScoredBy | None = Field(
        default=None, description="In a cascade: what scored this answer; null without a cascade."
    )
    jury: AnswerJury | None = Field(
        default=None, description="Under the jury grader: each judge's score and the spread; else null."
    )


class Timings(ResponseModel):
    queue_ms: float = 0.0
    judge_ms: float = 0.0
    total_ms: float = 0.0


class JudgeResponse(ResponseModel):
    judgement_id: str
    created_at: datetime
    status: GroupStatus
    grader: str
    judge_model: str | None
    prompt_version: str | None
    run_id: str | None
    step: int | None
    group_key: str | None
    answers: list[AnswerResult]
    usage: Usage
    timings: Timings
    attempts: int = Field(description="Judge calls made for this group (1 + retries).")
    # Position-bias control (judging/llm/orders.py); null for judgements made before it, or without the judge.
    order_seed: int | None = Field(default=None, description="Seed of the shuffled answer order.")
    answer_orders: list[list[str]] | None = Field(
        default=None, description="The answer ids in the order the judge saw them, one list per order."
    )
    order_sensitivity: float | None = Field(
        default=None, description="Mean spread (max - min) of answers' scores across orders; orders > 1."
    )
    grader_fingerprint: str | None = Field(
        default=None, description="Hash of the grader configuration; equal means scored the same way."
    )
    regrade_of: str | None = Field(default=None, description="The judgement this one re-scores, if any.")
    cascade: CascadePath | None = Field(
        default=None, description="In a cascade: 'judged' when the judge was called, else 'rule_only'."
    )
    rubric: RubricUse | None = Field(
        default=None, description="The rubric judged on (request field `rubric`); null without one."
    )
    reasons: Literal["inline", "none"] | None = Field(
        default=None,
        description="Whether the judge wrote reasons with its marks ('inline') or marks only ('none'; "
        "request field `reasons`); null without the judge.",
    )
    length_bias: float | None = Field(
        default=None,
        description="Spearman correlation of answer length and score over the group's scored answers: near "
        "1, longer answers score higher. Null below 3 scored answers, or when lengths or scores are all "
        "equal.",
    )


class BatchJudgeRequest(StrictModel):
    groups: list[JudgeRequest] = Field(min_length=1, max_length=MAX_BATCH_GROUPS)


class BatchItem(ResponseModel):
    """Exactly one of `judgement` and `error` is set."""

    judgement: JudgeResponse | None = None
    error: ErrorBody | None = None


class BatchJudgeResponse(ResponseModel):
    results: list[BatchItem] = Field(description="One entry per group, in request order.")
