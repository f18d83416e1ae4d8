"""The audit simulation's core (benchmarks/audit_simulation.py), as the issue states it: a policy whose
marker share goes from 0 to 60% at step 100 of 300, 64 groups a step, 5% audited, is found within 15
steps in every one of 20 seeds; 500 clean steps raise no alarm in any of 20 seeds; the audit judges
rate x groups within one a step (the service's sampler, judge_service/watch/audit.py)."""

from __future__ import annotations

from benchmarks.audit_simulation import Scenario, false_alarms, simulate


def test_gaming_is_found_within_fifteen_steps_of_its_onset() -> None:
    scenario = Scenario(steps=130, onset=100, share=0.6)  # the run past onset + 15 is all it needs
    for seed in range(20):
        onset = simulate(scenario, seed).onset
        assert onset.detected_at is not None, seed
        assert 100 <= onset.detected_at <= 115, (seed, onset)


def test_a_clean_run_raises_no_alarm() -> None:
    assert false_alarms(Scenario(steps=500, onset=None), 20) == 0


def test_the_audit_judges_rate_x_groups_within_one_a_step() -> None:
    scenario = Scenario(steps=300, onset=None)
    result = simulate(scenario, 0)
    expected = scenario.rate * scenario.groups  # 3.2
    assert all(abs(calls - expected) < 1 for calls in result.per_step), result.per_step
    assert result.audited == sum(result.per_step)
    assert abs(result.audited - scenario.rate * result.groups) <= scenario.steps
