"""The jury's aggregates and spread (judging/jury/aggregate.py) against hand-computed values, and the
JUDGE_JURY setting's checks (judging/jury/spec.py)."""

from __future__ import annotations

import json
import math

import pytest

from judge_service.judging.jury.aggregate import aggregate, spread_marks
from judge_service.judging.jury.spec import parse_jury

EQUAL = [(1.0, 1.0), (0.5, 1.0), (0.0, 1.0)]
WEIGHTED = [(1.0, 1.0), (0.5, 1.0), (0.0, 2.0)]  # the strict judge counts twice


def test_the_mean_is_weighted() -> None:
    assert aggregate(EQUAL, "mean") == pytest.approx(0.5)
    assert aggregate(WEIGHTED, "mean") == pytest.approx(1.5 / 4)


def test_the_median_is_weighted_and_splits_an_even_tie() -> None:
    assert aggregate(EQUAL, "median") == pytest.approx(0.5)
    # weights 2 | 1 | 1: the strict score holds exactly half, so the median is between it and the next
    assert aggregate(WEIGHTED, "median") == pytest.approx(0.25)
    assert aggregate([(0.2, 1.0), (0.8, 1.0)], "median") == pytest.approx(0.5)
    assert aggregate([(0.2, 1.0), (0.8, 3.0)], "median") == pytest.approx(0.8)


def test_min_ignores_weights() -> None:
    assert aggregate(WEIGHTED, "min") == 0.0
    assert aggregate([(0.75, 5.0), (0.5, 0.1)], "min") == 0.5


def test_mean_minus_std_penalises_a_disputed_answer_and_stops_at_zero() -> None:
    assert aggregate(EQUAL, "mean_minus_std") == pytest.approx(0.5 - math.sqrt(0.5 / 3))
    assert aggregate(EQUAL, "mean_minus_std", 0.5) == pytest.approx(0.5 - 0.5 * math.sqrt(0.5 / 3))
    agreed = [(0.75, 1.0), (0.75, 1.0)]
    assert aggregate(agreed, "mean_minus_std") == pytest.approx(0.75)  # no dispute, no penalty
    # weighted: mean 0.375, variance (2 x 0.375^2 + 0.125^2 + 0.625^2) / 4 = 0.171875
    assert aggregate(WEIGHTED, "mean_minus_std", 0.5) == pytest.approx(0.375 - 0.5 * math.sqrt(0.171875))
    assert aggregate(WEIGHTED, "mean_minus_std", 1.0) == 0.0


def test_one_score_is_its_own_aggregate_and_none_is_refused() -> None:
    for how in ("mean", "median", "min", "mean_minus_std"):
        assert aggregate([(0.25, 3.0)], how) == pytest.approx(0.25)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no scores"):
        aggregate([], "mean")


def test_the_spread_is_in_marks() -> None:
    assert spread_marks([1.0, 0.0]) == 4.0
    assert spread_marks([0.75, 0.5, 0.75]) == pytest.approx(1.0)
    assert spread_marks([0.5]) is None


def test_the_setting_reads_endpoints_and_one_local_judge() -> None:
    specs = parse_jury(
        json.dumps(
            [
                {"name": "own", "engine": "local"},
                {"name": "llama", "base_url": "http://llama:8000/v1", "model": "m", "weight": 0.5},
            ]
        )
    )
    assert [(s.name, s.local, s.weight) for s in specs] == [("own", True, 1.0), ("llama", False, 0.5)]


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("[]", "at least one judge"),
        ('[{"name": "a"}]', "give base_url and model"),
        ('[{"name": "a", "engine": "local", "model": "m"}]', "engine 'local' takes no model"),
        ('[{"name": "a", "engine": "local"}, {"name": "b", "engine": "local"}]', "at most one judge"),
        ('[{"name": "a", "engine": "local"}, {"name": "a", "base_url": "u", "model": "m"}]', "repeated: a"),
        ('[{"name": "A b", "engine": "local"}]', "name"),
        ("/nonexistent/jury.json", "neither a JSON list nor a readable file"),
    ],
)
def test_a_bad_setting_says_what_to_fix(setting: str, says: str) -> None:
    with pytest.raises(ValueError, match="JUDGE_JURY") as raised:
        parse_jury(setting)
    assert says in str(raised.value)
