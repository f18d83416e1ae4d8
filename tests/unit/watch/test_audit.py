"""Which groups the audit judge re-judges (a systematic sample per run step), and a run's audit figures
and onset from its stored records (watch/audit.py)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge_service.quality.divergence import GroupDivergence
from judge_service.quality.onset import WARMUP
from judge_service.watch.audit import STEPS_KEPT, StepSampler, audit_summary


@given(
    rate=st.floats(min_value=0.01, max_value=1.0),
    groups=st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=20),
)
def test_every_step_gets_its_share_within_one(rate: float, groups: list[int]) -> None:
    sampler = StepSampler(rate)
    for step, count in enumerate(groups):
        drawn = sum(sampler.draw("run", step) for _ in range(count))
        assert abs(drawn - count * rate) < 1, (step, count, drawn)


def test_steps_interleaved_across_runs_keep_their_own_counts() -> None:
    sampler = StepSampler(0.05)
    rng = random.Random(3)
    arrivals = [(run, step) for run in ("a", "b") for step in range(40) for _ in range(64)]
    rng.shuffle(arrivals)  # replicas and trainers interleave steps and runs
    drawn: dict[tuple[str, int], int] = {}
    for key in arrivals:
        drawn[key] = drawn.get(key, 0) + sampler.draw(*key)
    assert set(drawn.values()) <= {3, 4}  # 64 x 5% = 3.2
    assert sum(drawn.values()) == pytest.approx(80 * 3.2, abs=80)


def test_steps_draw_different_groups_and_the_same_ones_again() -> None:
    """The offset comes from the run, the step and the process's secret: steps differ in which arrivals
    they audit, a sampler with the same secret draws the same ones, and a caller cannot know them."""
    secret = b"0123456789abcdef"
    sampler = StepSampler(0.25, secret=secret)
    picks = [[i for i in range(20) if sampler.draw("run", step)] for step in range(8)]
    assert len({tuple(p) for p in picks}) > 1
    again = StepSampler(0.25, secret=secret)
    assert [[i for i in range(20) if again.draw("run", step)] for step in range(8)] == picks
    # Another process draws another secret: which arrivals are audited cannot be told from outside.
    others = [
        [[i for i in range(20) if s.draw("run", step)] for step in range(8)]
        for s in map(StepSampler, [0.25] * 5)
    ]
    assert any(other != picks for other in others)


def test_the_sampler_forgets_old_steps_not_new_ones() -> None:
    sampler = StepSampler(1.0)
    for step in range(STEPS_KEPT + 10):
        assert sampler.draw("run", step)
    assert len(sampler._seen) == STEPS_KEPT


def test_a_rate_outside_the_range_is_refused() -> None:
    for rate in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="audit rate"):
            StepSampler(rate)


def group(
    step: int, gap: float | None, rho: float | None, best_differs: bool | None = False
) -> GroupDivergence:
    return GroupDivergence(step, 3, rho, gap, {} if gap is None else {"tone": gap}, best_differs)


def test_a_step_is_the_mean_of_its_groups_each_figure_over_the_groups_that_have_it() -> None:
    steps, run = audit_summary(
        [group(1, 0.1, 1.0, False), group(1, 0.3, None, True), group(1, None, 0.5, None), group(2, 0.0, 1.0)],
        limit=10,
    )
    assert steps[1].groups == 3
    assert steps[1].gap == pytest.approx(0.2)
    assert steps[1].rank_correlation == pytest.approx(0.75)
    assert steps[1].best_disagreement == 0.5
    assert steps[1].criterion_gaps == {"tone": pytest.approx(0.2)}
    assert steps[2].groups == 1
    assert run.audited_groups == 4 and run.complete


def test_the_onset_is_where_the_gap_began_to_grow() -> None:
    rng = random.Random(5)
    groups = [group(step // 3, rng.gauss(0.0, 0.05), 0.9) for step in range(WARMUP + 30)]
    assert audit_summary(groups, limit=10_000)[1].onset is None
    change = (WARMUP + 30) // 3
    groups += [group(change + step // 3, 0.5, 0.9) for step in range(30)]
    _, run = audit_summary(groups, limit=10_000)
    assert run.audited_groups == len(groups)
    assert run.onset is not None and run.onset.figure == "gap"
    assert change <= run.onset.detected_at_step <= change + 2
    assert run.onset.began_at_step == change


def test_before_the_warm_up_ends_nothing_is_found() -> None:
    assert (
        audit_summary([group(step, 0.9, -1.0) for step in range(WARMUP - 1)], limit=10_000)[1].onset is None
    )


def test_a_run_read_up_to_the_limit_says_it_is_not_complete() -> None:
    assert not audit_summary([group(step, 0.0, 1.0) for step in range(5)], limit=5)[1].complete
