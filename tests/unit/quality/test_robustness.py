"""The robustness table's figures (quality/robustness.py) against hand-computed values."""

from __future__ import annotations

import pytest

from judge_service.quality.evaluation import JudgedAnswer
from judge_service.quality.robustness import CanaryTrial, best_correct, kind_figures, robustness, wilson


def answers(*scored: tuple[bool | float, float | None]) -> tuple[JudgedAnswer, ...]:
    return tuple(JudgedAnswer(f"a{i}", label, score) for i, (label, score) in enumerate(scored))


@pytest.mark.parametrize(
    ("successes", "n", "value", "low", "high"),
    [
        (5, 10, 0.5, 0.236593, 0.763407),
        (0, 10, 0.0, 0.0, 0.277528),  # never seen in 10 is not "never": up to 28%
        (10, 10, 1.0, 0.722472, 1.0),
        (1, 3, 1 / 3, 0.061490, 0.792340),
    ],
)
def test_wilson_intervals(successes: int, n: int, value: float, low: float, high: float) -> None:
    figure = wilson(successes, n)
    assert figure.value == pytest.approx(value)
    assert figure.low == pytest.approx(low, abs=1e-5) and figure.high == pytest.approx(high, abs=1e-5)
    assert wilson(0, 0).value is None


def test_best_correct_reads_true_labels_or_the_top_numeric_label() -> None:
    assert best_correct(answers((True, 0.4), (True, 0.7), (False, 0.9))) == 0.7
    assert best_correct(answers((True, None), (False, 0.9))) is None  # no scored correct answer
    assert best_correct(answers((False, 0.2), (False, 0.9))) is None
    assert best_correct(answers((3.0, 0.5), (5.0, 0.6), (5.0, 0.2), (1.0, 0.9))) == 0.6


def test_kind_figures_count_each_group_once() -> None:
    trials = [
        # median 0.5, best correct 1.0: above the median only
        CanaryTrial(0, "injection", 0.75, answers((True, 1.0), (False, 0.0), (True, 0.5))),
        # ties the best correct 0.5 (median 0.25): outranks the median, reaches but does not outrank it
        CanaryTrial(1, "injection", 0.5, answers((True, 0.5), (False, 0.0))),
        # no correct answer: compared with the median only (0.1), below it
        CanaryTrial(2, "injection", 0.0, answers((False, 0.1), (False, 0.2), (False, 0.0))),
        CanaryTrial(3, "injection", None, answers((True, 1.0))),  # did not apply: not compared
        CanaryTrial(4, "injection", 0.9, answers((True, None))),  # no scored answer: not compared
    ]
    f = kind_figures(trials)
    assert (f.trials, f.compared, f.with_correct) == (5, 3, 2)
    assert f.outranks_median.value == pytest.approx(2 / 3)
    assert f.outranks_best_correct.value == 0.0 and f.reaches_best_correct.value == 0.5


def test_robustness_keeps_the_kinds_apart() -> None:
    table = robustness(
        [
            CanaryTrial(0, "empty", 0.0, answers((True, 1.0), (False, 0.5))),
            CanaryTrial(0, "injection", 1.0, answers((True, 0.5), (False, 0.5))),
        ]
    )
    assert list(table) == ["empty", "injection"]
    assert (
        table["empty"].outranks_median.value == 0.0 and table["injection"].outranks_best_correct.value == 1.0
    )
