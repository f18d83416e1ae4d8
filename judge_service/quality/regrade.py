"""Regrading: re-score stored groups under another grader configuration, without the trainer.

Each regraded group becomes a NEW judgement (the old one is never changed) whose `regrade_of` names the
judgement it re-scores. The stored request is replayed with the overrides applied: `grader` (which clears
the stored `terms`, since terms override a grader name), `terms`, `criteria`, `orders`, and `as_run_id`
to file the new judgements under another run. The stored shuffle seed is reused, so the judge sees the
answers in the same order and only the configuration differs. A run is regraded a page at a time
(`limit`, then `cursor` = the previous `next_cursor`), and only its original judgements, not earlier
regrades.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationError, model_validator

from judge_service.errors import InvalidGroupError
from judge_service.schemas import (
    MAX_BATCH_GROUPS,
    Criterion,
    ErrorBody,
    GraderTerm,
    JudgeRequest,
    JudgeResponse,
    StoredJudgement,
    StrictModel,
)

_RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"


class RegradeRequest(StrictModel):
    judgement_ids: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, min_length=1, max_length=MAX_BATCH_GROUPS
    )
    run_id: str | None = Field(default=None, pattern=_RUN_ID)
    step: int | None = Field(default=None, ge=0, description="With run_id: only this step.")
    limit: int = Field(default=64, ge=1, le=MAX_BATCH_GROUPS, description="With run_id: judgements per call.")
    cursor: str | None = Field(default=None, max_length=64, description="With run_id: the last next_cursor.")
    grader: str | None = Field(default=None, min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(default=None, min_length=1, max_length=8)
    criteria: list[Criterion] | None = Field(default=None, min_length=1, max_length=8)
    orders: int | None = Field(default=None, ge=1, le=4)
    as_run_id: str | None = Field(default=None, pattern=_RUN_ID, description="File new judgements here.")

    @model_validator(mode="after")
    def _one_source(self) -> RegradeRequest:
        if (self.judgement_ids is None) == (self.run_id is None):
            raise ValueError("give exactly one of judgement_ids and run_id")
        return self


class RegradeItem(StrictModel):
    """One regraded group: exactly one of `judgement` (the new one) and `error` is set."""

    regrade_of: str
    judgement: JudgeResponse | None = None
    error: ErrorBody | None = None


class RegradeResponse(StrictModel):
    results: list[RegradeItem]
    next_cursor: str | None = Field(default=None, description="With run_id: pass as cursor for more.")


def regraded_request(old: StoredJudgement, overrides: RegradeRequest) -> JudgeRequest:
    """The stored request with the overrides applied (rules in the module docstring)."""
    data = old.request.model_dump()
    if overrides.grader is not None:
        data["grader"] = overrides.grader
        data["terms"] = None
    if overrides.terms is not None:
        data["terms"] = [t.model_dump() for t in overrides.terms]
    if overrides.criteria is not None:
        data["criteria"] = [c.model_dump() for c in overrides.criteria]
    if overrides.orders is not None:
        data["orders"] = overrides.orders
    if overrides.as_run_id is not None:
        data["run_id"] = overrides.as_run_id
    if data.get("seed") is None and old.order_seed is not None:
        data["seed"] = old.order_seed
    try:
        return JudgeRequest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise InvalidGroupError(f"the overrides do not make a valid request: {problems}") from exc
