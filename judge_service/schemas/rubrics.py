"""Criteria and checklist rubrics (service/rubrics.py, judging/llm/rubric_writer.py; docs/rubrics.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from judge_service.schemas.common import (
    CRITERION_NAME_PATTERN,
    MAX_TEXT_CHARS,
    ResponseModel,
    StrictModel,
    Text,
    Usage,
    _refuse_duplicates,
)
from judge_service.schemas.messages import ChatMessage

# Rubrics (service/rubrics.py, judging/llm/rubric_writer.py; docs/rubrics.md): an id is "rb_" and 24 hex
# digits of a hash of what the rubric was made from; "@N" names one version (edits add versions).
RUBRIC_ID_PATTERN = r"^rb_[0-9a-f]{24}$"
RUBRIC_REF_PATTERN = r"^(generate|rb_[0-9a-f]{24}(@[1-9][0-9]{0,5})?)$"
RUBRIC_DESCRIPTION = (
    "Judge on a checklist rubric instead of `criteria`: a rubric id (its latest version, or 'rb_...@N' for "
    "version N), or 'generate' to make (or reuse) the rubric for this conversation and reference first. "
    "The judgement records the rubric's id, version and hash."
)
MIN_RUBRIC_ITEMS = 3

Scale = Literal["1-5", "binary"]
CriterionKind = Literal["essential", "important", "optional", "pitfall"]
# Weights by kind where a criterion names no weight ("Rubrics as Rewards"): a pitfall that is met lowers
# the answer's score by its weight (judging/llm/scoring.py, Weighing).
KIND_WEIGHTS: dict[str, float] = {"essential": 1.0, "important": 0.7, "optional": 0.3, "pitfall": 0.9}
MAX_CRITERIA = 20  # a checklist rubric's items (docs/rubrics.md); four default criteria


class Criterion(StrictModel):
    # Frozen, so hashable: the rendered rubric and the grader fingerprint are cached per criteria.
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        pattern=CRITERION_NAME_PATTERN, description="Lower-case identifier, e.g. 'correctness'."
    )
    description: Text = Field(min_length=1, max_length=500)
    mark_1: Text | None = Field(
        default=None, min_length=1, max_length=300, description="Scale '1-5' (required): what 1 means."
    )
    mark_5: Text | None = Field(
        default=None, min_length=1, max_length=300, description="Scale '1-5' (required): what 5 means."
    )
    weight: float | None = Field(
        default=None,
        gt=0,
        le=100,
        description="Weight in the answer's overall score. Default: by `kind` (essential 1.0, important "
        "0.7, optional 0.3, pitfall 0.9), else 1.0.",
    )
    scale: Scale = Field(
        default="1-5",
        description="'1-5': a mark from 1 to 5, score (mark - 1) / 4; 'binary': a checklist item the judge "
        "says is met or not, score 1 or 0 (with score_from 'expected': the judge's probability of met).",
    )
    kind: CriterionKind | None = Field(
        default=None,
        description="A checklist item's importance, which sets its default weight; 'pitfall' (binary only) "
        "describes a mistake: met, it lowers the score.",
    )

    @model_validator(mode="after")
    def _fits_scale(self) -> Criterion:
        if self.scale == "1-5" and (self.mark_1 is None or self.mark_5 is None):
            raise ValueError(f"criterion '{self.name}' on scale '1-5' needs mark_1 and mark_5")
        if self.scale == "binary" and (self.mark_1 is not None or self.mark_5 is not None):
            raise ValueError(
                f"criterion '{self.name}' is binary (met or not): mark_1 and mark_5 are for scale '1-5'; "
                "say what meets it in the description"
            )
        if self.kind == "pitfall" and self.scale != "binary":
            raise ValueError(f"criterion '{self.name}': kind 'pitfall' needs scale 'binary'")
        return self

    @property
    def binary(self) -> bool:
        return self.scale == "binary"

    @property
    def pitfall(self) -> bool:
        return self.kind == "pitfall"

    @property
    def effective_weight(self) -> float:
        if self.weight is not None:
            return self.weight
        return KIND_WEIGHTS[self.kind] if self.kind is not None else 1.0


CRITERIA_AND_RUBRIC = "give criteria or a rubric, not both: a rubric is the request's criteria"


def _check_criteria(criteria: list[Criterion] | None, rubric: str | None) -> None:
    if criteria is not None:
        if rubric is not None:
            raise ValueError(CRITERIA_AND_RUBRIC)
        _refuse_duplicates("criterion name", [c.name for c in criteria])
        if all(c.pitfall for c in criteria):
            raise ValueError("criteria need at least one that is not a pitfall: pitfalls only lower a score")


MAX_RUBRIC_INSTRUCTIONS = 2000


class RubricRequest(StrictModel):
    """What a rubric is written from (POST /v1/rubrics): the conversation and the reference reply, if any."""

    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    reference: Text | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="The reference reply; null or absent: the rubric is written from the conversation alone.",
    )
    items: int | None = Field(
        default=None,
        ge=MIN_RUBRIC_ITEMS,
        le=MAX_CRITERIA,
        description="How many checklist items to write. Default: JUDGE_RUBRIC_ITEMS.",
    )
    instructions: Text | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RUBRIC_INSTRUCTIONS,
        description="Extra instructions to the rubric's writer, e.g. 'the final figure must be exact'.",
    )


class RubricEdit(StrictModel):
    """An edited rubric (PUT /v1/rubrics/{id}): its items in full; stored as the rubric's next version."""

    criteria: list[Criterion] = Field(min_length=1, max_length=MAX_CRITERIA)
    note: Text | None = Field(default=None, max_length=500, description="Why it was edited.")

    @model_validator(mode="after")
    def _checked(self) -> RubricEdit:
        _check_criteria(self.criteria, None)
        return self


class Rubric(ResponseModel):
    """One version of a rubric. Versions never change; an edit adds one."""

    id: str = Field(description="rb_ and a hash of what it was made from and the writer's prompt version.")
    version: int = Field(ge=1, description="1: as written by the judge; each edit adds one.")
    sha256: str = Field(description="Hash of the items (name, description, scale, kind, weight).")
    criteria: list[Criterion]
    source: Literal["generated", "edited"]
    request: RubricRequest = Field(description="What the rubric was written from.")
    judge_model: str | None = Field(description="The model that wrote version 1; null for an edit.")
    prompt_version: str = Field(description="The rubric writer's prompt version.")
    note: str | None = None
    usage: Usage = Field(default_factory=lambda: Usage(), description="The judge calls writing it took.")
    created_at: datetime


class RubricUse(ResponseModel):
    """The rubric a judgement was judged on."""

    id: str
    version: int
    sha256: str
