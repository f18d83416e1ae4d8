"""Scoring (judging/llm/scoring.py): one answer's marks to its grade, as the judge returns it."""

from __future__ import annotations

import pytest

from judge_service.judging.llm.parser import Mark
from judge_service.judging.llm.scoring import Scoring
from judge_service.schemas import Criterion


def crit(name: str, weight: float | None = None) -> Criterion:
    return Criterion(name=name, description=name, mark_1="bad", mark_5="good", weight=weight)


TWO = [crit("fact", weight=3), crit("style")]
ITEMS = [
    Criterion(name="shows_work", description="shows its working", scale="binary", kind="essential"),
    Criterion(name="wrong_unit", description="gives the wrong unit", scale="binary", kind="pitfall"),
    crit("clarity"),
]


def test_an_unmarked_answer_is_unscored_with_the_judges_reason_never_zero() -> None:
    grade = Scoring.of(TWO).grade(None, failure="the reply cut off before answer b")
    assert grade.score is None and grade.explanation == "the reply cut off before answer b"
    assert Scoring.of(TWO).grade(None).explanation == "the judge gave no marks for this answer"


def test_marks_scale_to_scores_and_the_weights_make_the_answer_score() -> None:
    grade = Scoring.of(TWO).grade({"fact": Mark(5, "right"), "style": Mark(1, "terse")})
    assert grade.score == pytest.approx(0.75)
    assert grade.criteria is not None
    assert grade.criteria["fact"]["score"] == 1.0 and grade.criteria["style"]["score"] == 0.0
    assert grade.criteria["fact"]["reason"] == "right"
    assert grade.explanation == "weighted mean of the judge's criterion scores"


def test_expected_marks_break_ties_and_the_missing_ones_are_named() -> None:
    scoring = Scoring.of(TWO, expected=True)
    marks = {"fact": Mark(4, "r", 4.5), "style": Mark(4, "r", 3.0)}
    assert scoring.grade(marks).score == pytest.approx((0.875 * 3 + 0.5) / 4)
    assert scoring.grade(marks).explanation.endswith("from expected marks")
    bare = scoring.grade({"fact": Mark(4, "r"), "style": Mark(4, "r")}, no_expected="no logprobs")
    assert bare.score == pytest.approx(0.75)
    assert "from integer marks where expected marks are missing (no logprobs)" in bare.explanation


def test_the_mean_over_orders_is_the_score_where_orders_were_combined() -> None:
    grade = Scoring.of(TWO).grade(
        {"fact": Mark(3, "r"), "style": Mark(3, "r")}, means={"fact": 0.625, "style": 0.5}
    )
    assert grade.score == pytest.approx((0.625 * 3 + 0.5) / 4)


def test_a_checklist_names_items_met_and_pitfalls_hit() -> None:
    marks = {"shows_work": Mark(1, "yes"), "wrong_unit": Mark(1, "km for m"), "clarity": Mark(5, "clear")}
    grade = Scoring.of(ITEMS).grade(marks)
    assert grade.criteria is not None and grade.criteria["shows_work"]["met"] is True
    assert grade.criteria["shows_work"]["mark"] is None
    assert grade.explanation.startswith(
        "rubric: met 1 of 1 items (shows_work); pitfalls hit: wrong_unit of 1"
    )
    assert grade.score is not None and 0 <= grade.score < 1  # the pitfall costs its weight
