"""Pruning old judgements (POST /v1/admin/prune)."""

from __future__ import annotations

from datetime import datetime

from pydantic import AwareDatetime, Field

from judge_service.schemas.common import RUN_ID_PATTERN, ResponseModel, StrictModel

MAX_PRUNE_PER_CALL = 10_000_000


class PruneRequest(StrictModel):
    before: AwareDatetime = Field(
        description="Delete judgements created before this time, with its zone (2026-11-01T00:00:00Z)."
    )
    run_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN, description="Only this run's.")
    include_labelled: bool = Field(
        default=False,
        description="Also delete judgements a person labelled, with their labels (kept by default).",
    )
    max_judgements: int = Field(
        default=100_000,
        ge=1,
        le=MAX_PRUNE_PER_CALL,
        description="Stop after this many (then `more` is true: call again), so no call runs for long.",
    )


class PruneReport(ResponseModel):
    before: datetime
    run_id: str | None = None
    judgements: int = Field(description="Judgements deleted (their idempotency keys with them).")
    explained_reasons: int = Field(description="Reasons written afterwards, deleted with their judgement.")
    labels: int = Field(description="Human labels deleted (only with include_labelled).")
    audits: int = Field(default=0, description="Audit judge records, deleted with their judgement.")
    claims: int = Field(description="Idempotency claims whose lease lapsed before the cut-off.")
    seconds: float
    more: bool = Field(description="True when max_judgements stopped it: call again for the rest.")
