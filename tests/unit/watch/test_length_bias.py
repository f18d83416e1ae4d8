"""Length bias against hand-computed Spearman correlations."""

from __future__ import annotations

import pytest

from judge_service.schemas import Answer, AnswerResult
from judge_service.watch.length_bias import length_bias


def judged(lengths: list[int], scores: list[float | None]) -> tuple[list[Answer], list[AnswerResult]]:
    answers = [Answer(id=f"a{i}", text="x" * n) for i, n in enumerate(lengths)]
    results = [
        AnswerResult(id=f"a{i}", status="unscored", score=None, error="none")
        if s is None
        else AnswerResult(id=f"a{i}", status="scored", score=s)
        for i, s in enumerate(scores)
    ]
    return answers, results


@pytest.mark.parametrize(
    ("lengths", "scores", "expected"),
    [
        ([10, 20, 30, 40], [0.1, 0.2, 0.3, 0.9], 1.0),  # longer always scores higher
        ([10, 20, 30, 40], [0.9, 0.3, 0.2, 0.1], -1.0),
        # ranks (1, 2, 3) and (1.5, 1.5, 3): covariance 1.5, variances 2 and 1.5 -> 1.5 / sqrt(3)
        ([10, 20, 30], [0.5, 0.5, 1.0], 0.866025),
        # ranks (1, 2, 3, 4) and (2, 4, 1, 3): sum d^2 = 1 + 4 + 4 + 1 = 10 -> 1 - 6 * 10 / 60 = 0
        ([5, 6, 7, 8], [0.2, 0.4, 0.1, 0.3], 0.0),
        # the unscored answer is left out: (1, 2, 3) against (1, 3, 2) -> 1 - 6 * 2 / 24 = 0.5
        ([1, 2, 3, 99], [0.1, 0.3, 0.2, None], 0.5),
    ],
)
def test_length_bias_is_spearmans_rho(
    lengths: list[int], scores: list[float | None], expected: float
) -> None:
    assert length_bias(*judged(lengths, scores)) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("lengths", "scores"),
    [
        ([10, 20], [0.1, 0.9]),  # below 3 scored answers
        ([10, 20, 30], [0.1, None, 0.9]),
        ([10, 10, 10], [0.1, 0.5, 0.9]),  # every length equal
        ([10, 20, 30], [0.5, 0.5, 0.5]),  # every score equal: a flat group
    ],
)
def test_length_bias_is_none_where_it_says_nothing(lengths: list[int], scores: list[float | None]) -> None:
    assert length_bias(*judged(lengths, scores)) is None
