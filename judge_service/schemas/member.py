"""One answer of a group sent on its own (POST /v1/judge/member; assembly/)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from judge_service.schemas.canaries import CANARIES_DESCRIPTION, Canaries
from judge_service.schemas.cascade import CASCADE_DESCRIPTION, CascadeOptions
from judge_service.schemas.common import (
    ITEM_DESCRIPTION,
    MAX_ANSWERS,
    MAX_ORDERS,
    MAX_STEP,
    MAX_TEXT_CHARS,
    REFERENCE_DESCRIPTION,
    RUN_ID_PATTERN,
    Item,
    ResponseModel,
    StrictModel,
    Text,
)
from judge_service.schemas.comparison import COMPARISON_DESCRIPTION, ComparisonOptions
from judge_service.schemas.graders import GraderTerm
from judge_service.schemas.judge import (
    DECODING_DESCRIPTION,
    REASONS_DESCRIPTION,
    SCORE_FROM_DESCRIPTION,
    AnswerResult,
    Decoding,
    GroupStatus,
    Reasons,
    ScoreFrom,
)
from judge_service.schemas.jury import JURY_DESCRIPTION, JuryOptions
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
    _check_criteria,
)
from judge_service.schemas.rules import RuleOptions
from judge_service.schemas.thinking import (
    REASONING_EFFORT_DESCRIPTION,
    THINKING_DESCRIPTION,
    ReasoningEffort,
    Thinking,
)

MAX_MEMBER_DEADLINE_S = 3600.0  # the longest a member may wait for its group


class MemberRequest(StrictModel):
    """One answer of a group, sent on its own by a trainer that scores one sample at a time
    (POST /v1/judge/member): the service holds members until the group is complete (assembly/)."""

    group_key: Text = Field(min_length=1, max_length=256, description="Names the group; one per prompt.")
    group_size: int = Field(ge=1, le=MAX_ANSWERS, description="How many answers the group will have.")
    answer: Answer
    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    tools: list[Tool] | None = Field(
        default=None, min_length=1, max_length=MAX_TOOLS, description=TOOLS_DESCRIPTION
    )
    reference: Text | None = Field(default=None, max_length=MAX_TEXT_CHARS, description=REFERENCE_DESCRIPTION)
    criteria: list[Criterion] | None = Field(default=None, min_length=1, max_length=MAX_CRITERIA)
    rubric: str | None = Field(default=None, pattern=RUBRIC_REF_PATTERN, description=RUBRIC_DESCRIPTION)
    grader: str = Field(default="judge", min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(default=None, min_length=1, max_length=8)
    options: RuleOptions = Field(default_factory=RuleOptions)
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    orders: int = Field(default=1, ge=1, le=MAX_ORDERS)
    decoding: Decoding | None = Field(default=None, description=DECODING_DESCRIPTION)
    score_from: ScoreFrom | None = Field(default=None, description=SCORE_FROM_DESCRIPTION)
    reasons: Reasons | None = Field(default=None, description=REASONS_DESCRIPTION)
    thinking: Thinking | None = Field(default=None, description=THINKING_DESCRIPTION)
    reasoning_effort: ReasoningEffort | None = Field(default=None, description=REASONING_EFFORT_DESCRIPTION)
    item: Item | None = Field(default=None, description=ITEM_DESCRIPTION)
    canaries: Canaries | None = Field(default=None, description=CANARIES_DESCRIPTION)
    comparison: ComparisonOptions | None = Field(default=None, description=COMPARISON_DESCRIPTION)
    cascade: CascadeOptions | None = Field(default=None, description=CASCADE_DESCRIPTION)
    jury: JuryOptions | None = Field(default=None, description=JURY_DESCRIPTION)
    deadline_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_MEMBER_DEADLINE_S,
        description="Seconds from the group's first member until it is judged with the members present; "
        "default JUDGE_MEMBER_DEADLINE_S. The first member's value holds for the group.",
    )
    min_members: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ANSWERS,
        description="At the deadline, judge the members present if at least this many; else each is "
        "answered `incomplete`, unscored. Default JUDGE_MEMBER_MIN_MEMBERS.",
    )

    @model_validator(mode="after")
    def _checked_criteria(self) -> MemberRequest:
        _check_criteria(self.criteria, None)
        check_structure(self.conversation, [self.answer], self.tools)
        return self

    def group_fields(self) -> dict[str, Any]:
        """What the first member fixes for the whole group (the others must send the same)."""
        return self.model_dump(exclude={"answer", "deadline_s", "min_members"})


class MemberResponse(ResponseModel):
    """The answer of one member request: its own answer's result, and the group's judgement."""

    group_key: str
    judgement_id: str | None = Field(description="The group's stored judgement; null when it was incomplete.")
    answer: AnswerResult = Field(description="This member's answer (unscored, never 0, when incomplete).")
    group_status: GroupStatus | Literal["incomplete"]
    members: int = Field(description="Answers judged together (the group size, or fewer at the deadline).")
    closed_by: Literal["size", "deadline", "stored"] = Field(
        description="size: every member arrived; deadline: judged or refused at the deadline; stored: "
        "a retry answered from the stored judgement."
    )
