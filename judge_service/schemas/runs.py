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
    last_activity: datetime


class RunSteps(ResponseModel):
    run_id: str
    items: list[StepFigures]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")
