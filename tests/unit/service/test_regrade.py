"""Regrading (service/regrade.py): how a stored request is replayed under overrides."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from judge_service.errors import InvalidGroupError
from judge_service.schemas import Criterion, JudgeRequest, RegradeRequest, StoredJudgement, Timings, Usage
from judge_service.service.regrade import regraded_request
from tests.unit.requests import CRITERION, request


def stored(req: JudgeRequest, order_seed: int | None = 99) -> StoredJudgement:
    return StoredJudgement(
        judgement_id="0" * 32,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        status="ok",
        grader="judge",
        judge_model="fake",
        prompt_version="judge_group@x",
        run_id=req.run_id,
        step=req.step,
        group_key=req.group_key,
        answers=[],
        usage=Usage(),
        timings=Timings(),
        attempts=1,
        request=req,
        raw_outputs=[],
        order_seed=order_seed,
    )


def test_regraded_request_applies_overrides_and_keeps_the_shown_order() -> None:
    old = stored(request(terms=[{"grader": "judge", "weight": 1}], run_id="r1", step=2))
    new = regraded_request(old, RegradeRequest(judgement_ids=["x"], grader="similarity"))
    assert (new.grader, new.terms, new.seed, new.run_id, new.step) == ("similarity", None, 99, "r1", 2)
    new = regraded_request(
        old, RegradeRequest(judgement_ids=["x"], criteria=[CRITERION], orders=2, as_run_id="r2")
    )
    assert new.criteria is not None and [c.name for c in new.criteria] == ["correctness"]
    assert (new.orders, new.run_id, new.terms is not None) == (2, "r2", True)
    assert regraded_request(stored(request(seed=7)), RegradeRequest(judgement_ids=["x"])).seed == 7
    assert regraded_request(stored(request(), None), RegradeRequest(judgement_ids=["x"])).seed is None


def test_overrides_that_break_the_request_are_an_invalid_group() -> None:
    with pytest.raises(ValueError, match="criterion name must be unique"):  # refused as sent, too
        RegradeRequest(judgement_ids=["x"], criteria=[CRITERION, CRITERION])
    one = Criterion.model_validate(CRITERION)
    overrides = RegradeRequest.model_construct(judgement_ids=["x"], criteria=[one, one], **_UNSET_OVERRIDES)
    with pytest.raises(InvalidGroupError, match="criterion name must be unique"):
        regraded_request(stored(request()), overrides)


_UNSET_OVERRIDES = {
    name: field.default
    for name, field in RegradeRequest.model_fields.items()
    if name not in ("judgement_ids", "criteria")
}


def test_regrade_request_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RegradeRequest()
    with pytest.raises(ValueError, match="exactly one"):
        RegradeRequest(judgement_ids=["x"], run_id="r")
