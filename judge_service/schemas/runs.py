"""Runs (GET /v1/runs...): their summaries, judgements and per-step figures."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from judge_service.schemas.canaries import CanaryKind
from judge_service.schemas.common import ResponseModel
from judge_service.schemas.judge import JudgeResponse

MAX_RUNS_PAGE = 500  # GET /v1/runs
MAX_JUDGEMENTS_PAGE = 500  # GET /v1/runs/{run_id}/judgements (the clients page at it)
MAX_STEPS_PAGE = 2000  # GET /v1/runs/{run_id}/steps: a plot of a long run in one call


class JudgementPage(ResponseModel):
    items: list[JudgeResponse]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class FingerprintCount(ResponseModel):
    fingerprint: str | None = Field(description="Grader fingerprint; null for judgements made before them.")
    judgements: int


class RunSummary(ResponseModel):
    run_id: str
    steps: int = Field(description="Distinct steps with judgements.")
    judgements: int
    last_activity: datetime = Field(description="When the run's latest judgement was stored.")
    last_step: int | None
    last_step_mean_score: float | None = Field(
        description="Mean score of the scored answers of the last step."
    )
    unscored_share: float | None = Field(description="Unscored answers / answers, over the whole run.")
    fingerprints: list[FingerprintCount] = Field(description="Grader fingerprints used, most used first.")


class RunPage(ResponseModel):
    items: list[RunSummary]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class AuditedAnswer(ResponseModel):
    id: str
    training: float | None = Field(description="The training judge's score (the reward); null: unscored.")
    audit: float | None = Field(description="The audit judge's score; null: it could not score the answer.")


class AuditRecord(ResponseModel):
    """One group as the audit judge re-judged it (watch/auditor.py), stored beside its judgement."""

    judgement_id: str
    run_id: str
    step: int
    created_at: datetime
    judge: str = Field(description="The audit judge's name (JUDGE_AUDIT).")
    model: str
    prompt_version: str | None
    answers: list[AuditedAnswer]
    rank_correlation: float | None = Field(
        description="Spearman's rho of the two judges' scores over the answers both scored; null under two "
        "distinct scores on either side."
    )
    gap: float | None = Field(description="Mean over those answers of training score less audit score.")
    criterion_gaps: dict[str, float] = Field(description="The gap per criterion both judges marked.")
    best_differs: bool | None = Field(
        description="Whether the training judge's best answer is not the audit judge's; null where either "
        "has no single best."
    )


class StepAudit(ResponseModel):
    """A step's audited groups, against the audit judge (quality/divergence.py)."""

    groups: int = Field(description="Groups of the step the audit judge re-judged.")
    rank_correlation: float | None = Field(description="Mean within-group rank correlation of the judges.")
    gap: float | None = Field(description="Mean score gap, training judge less audit judge.")
    criterion_gaps: dict[str, float] = Field(description="The mean gap per criterion both judges marked.")
    best_disagreement: float | None = Field(
        description="Share of groups whose best answer differs between the judges."
    )


class AuditOnset(ResponseModel):
    figure: str = Field(
        description="The figure whose detector fired: gap (rising) or rank_correlation (falling)."
    )
    began_at_step: int | None = Field(description="Where the divergence began (the CUSUM last left zero).")
    detected_at_step: int = Field(description="Where the detector passed its threshold.")


class RunAudit(ResponseModel):
    """The audit of a whole run, from its first audited group (quality/onset.py states the detector)."""

    audited_groups: int
    complete: bool = Field(
        description="False: the run has more audited groups than are read for its figures (the first 20,000 "
        "by step); the onset and the steps after them are not seen."
    )
    onset: AuditOnset | None = Field(
        description="Where the training judge began to part from the audit judge; null: no divergence found "
        "(or fewer audited groups than the detector's warm-up)."
    )
    warmup_groups: int = Field(description="Audited groups the detector takes as its baseline first.")


class StepFigures(ResponseModel):
    """One step of a run, aggregated over its judgements (those of one fingerprint when filtered)."""

    step: int
    groups: int
    answers: int
    mean_score: float | None = Field(description="Mean over scored answers.")
    score_sd: float | None = Field(description="Standard deviation of the scored answers' scores.")
    flat_share: float | None = Field(
        description="Share of groups (with 2+ scored answers) whose answers all got the same score: no "
        "learning signal for GRPO."
    )
    unscored_share: float | None
    order_sensitivity: float | None = Field(description="Mean over groups judged under 2+ orders.")
    prompt_tokens: float | None = Field(description="Mean judge prompt tokens per group.")
    completion_tokens: float | None = Field(description="Mean judge completion tokens per group.")
    judge_ms: float | None = Field(description="Mean judge time per group.")
    canary_groups: int = Field(
        default=0, description="Groups whose canary was scored beside a scored answer."
    )
    canary_outrank_share: float | None = Field(
        default=None,
        description="Share of those canaries that scored above their group's median answer: a judge that can "
        "be gamed. Null without canaries.",
    )
    canary_outrank_by_kind: dict[CanaryKind, float] = Field(
        default_factory=dict, description="canary_outrank_share per kind, for the kinds the step had."
    )
    length_bias: float | None = Field(
        default=None,
        description="Mean over groups of the Spearman correlation of answer length and score (length_bias).",
    )
    audit: StepAudit | None = Field(
        default=None, description="The step against the audit judge (JUDGE_AUDIT); null: none audited."
    )
    last_activity: datetime


class RunSteps(ResponseModel):
    run_id: str
    items: list[StepFigures]
    audit: RunAudit | None = Field(
        default=None, description="The run against the audit judge; null: no group of it was audited."
    )
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")
