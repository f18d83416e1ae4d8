"""Regrading stored judgements (POST /v1/regrade)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from judge_service.schemas.cascade import CASCADE_DESCRIPTION, CascadeOptions
from judge_service.schemas.common import (
    MAX_BATCH_GROUPS,
    MAX_ORDERS,
    MAX_STEP,
    RUN_ID_PATTERN,
    ResponseModel,
    StrictModel,
)
from judge_service.schemas.comparison import COMPARISON_DESCRIPTION, ComparisonOptions
from judge_service.schemas.errors import ErrorBody
from judge_service.schemas.graders import GraderTerm
from judge_service.schemas.judge import (
    DECODING_DESCRIPTION,
    REASONS_DESCRIPTION,
    SCORE_FROM_DESCRIPTION,
    Decoding,
    JudgeResponse,
    Reasons,
    ScoreFrom,
)
from judge_service.schemas.jury import JURY_DESCRIPTION, JuryOptions
from judge_service.schemas.rubrics import MAX_CRITERIA, RUBRIC_REF_PATTERN, Criterion, _check_criteria
from judge_service.schemas.thinking import (
    REASONING_EFFORT_DESCRIPTION,
    THINKING_DESCRIPTION,
    ReasoningEffort,
    Thinking,
)


class RegradeRequest(StrictModel):
    judgement_ids: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, min_length=1, max_length=MAX_BATCH_GROUPS
    )
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    step: int | None = Field(default=None, ge=0, le=MAX_STEP, description="With run_id: only this step.")
    limit: int = Field(default=64, ge=1, le=MAX_BATCH_GROUPS, description="With run_id: judgements per call.")
    cursor: str | None = Field(default=None, max_length=64, description="With run_id: the last next_cursor.")
    grader: str | None = Field(default=None, min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(default=None, min_length=1, max_length=8)
    criteria: list[Criterion] | None = Field(default=None, min_length=1, max_length=MAX_CRITERIA)
    rubric: str | None = Field(
        default=None,
        pattern=RUBRIC_REF_PATTERN,
        description="Judge on this rubric instead (as in judge requests). Default: the stored rubric, the "
        "same version, when the judgement had one.",
    )
    orders: int | None = Field(default=None, ge=1, le=MAX_ORDERS)
    decoding: Decoding | None = Field(default=None, description=DECODING_DESCRIPTION)
    score_from: ScoreFrom | None = Field(default=None, description=SCORE_FROM_DESCRIPTION)
    reasons: Reasons | None = Field(default=None, description=REASONS_DESCRIPTION)
    thinking: Thinking | None = Field(default=None, description=THINKING_DESCRIPTION)
    reasoning_effort: ReasoningEffort | None = Field(default=None, description=REASONING_EFFORT_DESCRIPTION)
    comparison: ComparisonOptions | None = Field(default=None, description=COMPARISON_DESCRIPTION)
    cascade: CascadeOptions | None = Field(default=None, description=CASCADE_DESCRIPTION)
    jury: JuryOptions | None = Field(default=None, description=JURY_DESCRIPTION)
    as_run_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="File new judgements here."
    )

    @model_validator(mode="after")
    def _one_source(self) -> RegradeRequest:
        if (self.judgement_ids is None) == (self.run_id is None):
            raise ValueError("give exactly one of judgement_ids and run_id")
        _check_criteria(self.criteria, self.rubric)
        return self


class RegradeItem(ResponseModel):
    """One regraded group: exactly one of `judgement` (the new one) and `error` is set."""

    regrade_of: str
    judgement: JudgeResponse | None = None
    error: ErrorBody | None = None


class RegradeResponse(ResponseModel):
    results: list[RegradeItem]
    next_cursor: str | None = Field(default=None, description="With run_id: pass as cursor for more.")
