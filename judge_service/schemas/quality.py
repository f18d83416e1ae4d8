"""Judge-quality reports: human labels, agreement with them, and calibration (quality/; docs/quality.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge_service.schemas.common import (
    ANSWER_ID_PATTERN,
    MAX_ANSWERS,
    MAX_STEP,
    RUN_ID_PATTERN,
    ResponseModel,
    StrictModel,
    Unicode,
)

# Labels and scores are stored and read back as JSON, which has no infinity or NaN.
Finite = Annotated[float, Field(allow_inf_nan=False)]
Score = Finite | None


class HumanLabels(BaseModel):
    """One labelled group: a line of the human-labels JSONL file."""

    model_config = ConfigDict(extra="forbid")

    judgement_id: str | None = Field(default=None, max_length=64)
    group_key: str | None = Field(default=None, max_length=256)
    labeler: str | None = Field(
        default=None, max_length=64, description="Who labelled the group (several people may label one)."
    )
    human: dict[Unicode, Finite] = Field(
        min_length=1, max_length=MAX_ANSWERS, description="answer id -> score, or rank (1 is best)"
    )
    kind: Literal["score", "rank"] = "score"
    scale: tuple[Finite, Finite] | None = Field(
        default=None, description="For scores: the human scale's lowest and highest value; default 0-1."
    )

    @model_validator(mode="after")
    def _one_key(self) -> HumanLabels:
        if (self.judgement_id is None) == (self.group_key is None):
            raise ValueError("give exactly one of judgement_id and group_key")
        if self.scale is not None and not self.scale[0] < self.scale[1]:
            raise ValueError(f"scale must be (lowest, highest) with lowest < highest, got {self.scale}")
        return self

    @property
    def key(self) -> str:
        return self.judgement_id or self.group_key or ""


LABELER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@:\- ]{0,63}$"


class LabelsRequest(StrictModel):
    """A person's labels for one judged group (PUT /v1/judgements/{id}/labels), by answer id."""

    human: dict[Annotated[str, Field(pattern=ANSWER_ID_PATTERN)], Finite] = Field(
        min_length=1,
        max_length=MAX_ANSWERS,
        description="answer id -> score (on `scale`), or rank (1 is best)",
    )
    kind: Literal["score", "rank"] = "score"
    scale: tuple[Finite, Finite] | None = Field(
        default=None,
        description="For scores: lowest and highest value of the scale, e.g. [1, 5]; default 0-1.",
    )
    labeler: str | None = Field(
        default=None, pattern=LABELER_PATTERN, description="Who labels; default: the API key's identity."
    )


class StoredLabels(ResponseModel):
    items: list[HumanLabels]


class GroupAgreement(BaseModel):
    key: str
    kind: Literal["score", "rank"]
    answers: int = Field(description="Answers compared: labelled by the human and scored by the grader.")
    kendall_tau_b: float | None
    spearman_rho: float | None
    pairs: int = Field(description="Answer pairs with a strict human preference.")
    pairwise_accuracy: float | None
    mean_absolute_error: float | None
    missing_answers: list[str] = Field(description="Labelled answers the grader did not score.")


class AgreementReport(BaseModel):
    groups: int = Field(description="Labelled groups.")
    matched_groups: int
    unmatched: list[str] = Field(description="Keys of labelled groups with no grader judgement.")
    mean_kendall_tau_b: float | None
    mean_spearman_rho: float | None
    tau_groups: int = Field(description="Groups where tau-b is defined (the mean's count).")
    rho_groups: int
    pairs: int
    pairwise_accuracy: float | None
    mae_answers: int
    mean_absolute_error: float | None
    per_group: list[GroupAgreement]


class FingerprintAgreement(BaseModel):
    """How well one grader fingerprint agrees with a run's human labels (GET /v1/runs/{run_id}/agreement)."""

    fingerprint: str | None
    report: AgreementReport
    worst: list[GroupAgreement] = Field(description="The groups that disagree most, worst first.")


class ThresholdRate(BaseModel):
    threshold: float
    passed: int
    failed: int
    pass_rate: float
    fail_rate: float


class Recommendation(BaseModel):
    threshold: float | None
    fail_rate: float | None
    reason: str


class CalibrationReport(BaseModel):
    groups: int
    scored_answers: int
    unscored_answers: int
    mean_score: float | None
    thresholds: list[ThresholdRate]
    recommendation: Recommendation
    flat_groups: int
    flat_group_share: float | None
    too_few_scored_groups: int
    too_few_scored_share: float | None
    notes: list[str]


class RunSelection(StrictModel):
    run_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="Read the run's stored judgements."
    )
    step: int | None = Field(default=None, ge=0, le=MAX_STEP, description="With run_id: only this step.")
    fingerprint: str | None = Field(default=None, max_length=64, description="With run_id: only this grader.")


class CalibrationRequest(RunSelection):
    groups: list[list[Score]] | None = Field(
        default=None, min_length=1, max_length=100_000, description="Inline: each group's answer scores."
    )

    @model_validator(mode="after")
    def _one_source(self) -> CalibrationRequest:
        if (self.groups is None) == (self.run_id is None):
            raise ValueError("give exactly one of groups and run_id")
        return self


class AgreementRequest(RunSelection):
    human: list[HumanLabels] = Field(min_length=1, max_length=10_000)
    scores: dict[Unicode, dict[Unicode, Score]] | None = Field(
        default=None,
        description="Inline grader scores: judgement_id or group_key -> answer id -> score. Default: the "
        "stored judgements (by judgement_id, or by group_key within run_id).",
    )
    scale: tuple[Finite, Finite] | None = Field(default=None, description="Human score scale; default 0-1.")
