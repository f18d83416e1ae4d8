"""The figures of an audited group and of a step: rank correlation, score gaps and best-answer disagreement
between the training judge and the audit judge, over the answers both scored."""

from __future__ import annotations

import pytest

from judge_service.quality.divergence import AnswerScores, group_divergence, step_divergence


def scores(*overall: float | None, criterion: str = "correctness") -> dict[str, AnswerScores]:
    return {
        f"a{i}": AnswerScores(score, {} if score is None else {criterion: score})
        for i, score in enumerate(overall)
    }


def test_two_judges_that_agree_have_no_gap_and_the_same_best() -> None:
    same = scores(0.25, 0.5, 1.0)
    figures = group_divergence(3, same, same)
    assert figures.step == 3 and figures.answers == 3
    assert figures.rank_correlation == pytest.approx(1.0) and figures.gap == pytest.approx(0.0)
    assert figures.criterion_gaps == {"correctness": pytest.approx(0.0)} and figures.best_differs is False


def test_a_generous_judge_shows_as_a_gap_and_a_changed_best() -> None:
    figures = group_divergence(0, scores(0.25, 1.0, 0.75), scores(0.25, 0.5, 0.75))
    assert figures.gap == pytest.approx(0.5 / 3) and figures.criterion_gaps["correctness"] == pytest.approx(
        0.5 / 3
    )
    assert figures.best_differs is True
    assert figures.rank_correlation == pytest.approx(0.5)


def test_only_answers_both_judges_scored_count() -> None:
    figures = group_divergence(0, scores(0.5, None, 1.0), scores(0.5, 0.75, None))
    assert figures.answers == 1 and figures.rank_correlation is None and figures.gap == pytest.approx(0.0)
    nothing = group_divergence(0, scores(None, None), scores(0.5, 0.5))
    assert nothing.answers == 0 and nothing.gap is None and nothing.best_differs is None


def test_a_tie_at_the_top_has_no_best_to_disagree_on() -> None:
    assert group_divergence(0, scores(1.0, 1.0, 0.5), scores(1.0, 0.5, 0.25)).best_differs is None


def test_a_step_is_the_mean_of_its_groups() -> None:
    first = group_divergence(7, scores(0.25, 1.0, 0.75), scores(0.25, 0.5, 0.75))
    second = group_divergence(7, scores(0.25, 0.5, 1.0), scores(0.25, 0.5, 1.0))
    tied = group_divergence(7, scores(1.0, 1.0), scores(1.0, 1.0))
    other = group_divergence(2, scores(0.0, 1.0), scores(0.0, 1.0))
    two, seven = step_divergence([first, other, second, tied])
    assert (two.step, two.groups, seven.step, seven.groups) == (2, 1, 7, 3)
    assert seven.gap == pytest.approx((0.5 / 3) / 3)
    assert seven.best_disagreement == pytest.approx(0.5)  # the tied group has no best: not counted
    assert seven.rank_correlation == pytest.approx((0.5 + 1.0) / 2)  # the tied group: undefined
