"""Grader fingerprints (what changes them, what does not) and how a stored request is replayed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from judge_service.backends.fake import FakeBackend
from judge_service.backends.readiness import Readiness
from judge_service.config import PACKAGED_PROMPTS
from judge_service.errors import InvalidGroupError
from judge_service.judging.fingerprint import grader_fingerprint
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller, JudgeSettings
from judge_service.judging.llm.judge import LLMJudge
from judge_service.judging.llm.prompt import PromptRenderer
from judge_service.judging.registry import GraderRegistry
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest, RegradeRequest, StoredJudgement, Timings, Usage
from judge_service.service.regrade import regraded_request

PROMPTS = PACKAGED_PROMPTS
CRITERION = {"name": "correctness", "description": "right", "mark_1": "wrong", "mark_5": "right"}


def judge(model: str = "fake-judge", **settings: Any) -> LLMJudge:
    renderer = PromptRenderer(PROMPTS, "judge_group")
    metrics = JudgeMetrics()
    caller = JudgeCaller(FakeBackend(model_name=model), renderer, metrics, JudgeSettings(**settings))
    return LLMJudge(
        caller,
        admission=GroupAdmission(1, 1, metrics),
        metrics=metrics,
        readiness=Readiness(metrics, backend="fake"),
    )


def request(**extra: Any) -> JudgeRequest:
    body: dict[str, Any] = {
        "conversation": [{"role": "user", "content": "2+2?"}],
        "reference": "4",
        "answers": [{"id": "a", "text": "4"}, {"id": "b", "text": "5"}],
    }
    return JudgeRequest.model_validate(body | extra)


def fp(req: JudgeRequest, llm: LLMJudge | None = None) -> str:
    return grader_fingerprint(GraderRegistry.with_rule_graders(llm or judge()).plan(req))


def test_fingerprints_are_those_the_previous_build_stored() -> None:
    """Pinned: tests/data/make_fixture_4b52f6d.py printed these at 4b52f6d (the fake judge, default
    settings), so judgements stored before this build stay comparable with new ones."""
    assert fp(request()) == "eeaf606fb56327bd"
    assert fp(request(grader="judge+similarity", orders=2)) == "9c0e58fcca4ea948"
    assert fp(request(grader="similarity")) == "d9816aa5a72b9d14"


def test_fingerprint_is_short_stable_and_ignores_per_group_fields() -> None:
    base = fp(request())
    assert len(base) == 16 and int(base, 16) >= 0
    assert fp(request(seed=5, run_id="r", step=3, group_key="k")) == base
    assert fp(request(answers=[{"id": "z", "text": "other"}])) == base


@pytest.mark.parametrize(
    "changed",
    [
        lambda: fp(request(criteria=[CRITERION])),
        lambda: fp(request(orders=2)),
        lambda: fp(request(grader="judge+similarity")),
        lambda: fp(request(terms=[{"grader": "judge", "weight": 2}])),
        lambda: fp(request(), judge(model="other-judge")),
        lambda: fp(request(), judge(temperature=0.7)),
        lambda: fp(request(), judge(reason_max_chars=60)),
        lambda: fp(request(), judge(parse_retries=0)),
        lambda: fp(request(), judge(shuffle_answers=False)),
    ],
)
def test_anything_that_changes_scores_changes_the_fingerprint(changed: Any) -> None:
    assert changed() != fp(request())


def test_weights_and_rule_options_count_only_where_they_apply() -> None:
    one = fp(request(criteria=[CRITERION]))
    assert fp(request(criteria=[CRITERION | {"weight": 2}])) != one
    # Rule options change a rule grader's scores, not the judge's.
    assert fp(request(options={"case_sensitive": True})) == fp(request())
    sim = request(grader="similarity")
    assert fp(request(grader="similarity", options={"case_sensitive": True})) != fp(sim)
    # A rule-only grader does not depend on the judge's model.
    assert fp(sim, judge(model="other-judge")) == fp(sim)


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
    overrides = RegradeRequest(judgement_ids=["x"], criteria=[CRITERION, CRITERION])
    with pytest.raises(InvalidGroupError, match="criterion name must be unique"):
        regraded_request(stored(request()), overrides)


def test_regrade_request_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RegradeRequest()
    with pytest.raises(ValueError, match="exactly one"):
        RegradeRequest(judgement_ids=["x"], run_id="r")
