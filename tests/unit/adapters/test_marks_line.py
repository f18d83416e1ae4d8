"""The line a trainer's completion table shows for an answer: marks with reasons, or marks alone."""

from __future__ import annotations

from judge_service.adapters.groups import marks_line, reason_of
from judge_service.schemas import AnswerResult, CriterionMark


def answer(reason: str | None) -> AnswerResult:
    criteria = {
        "correctness": CriterionMark(mark=4, score=0.75, reason=reason),
        "tone": CriterionMark(mark=5, score=1.0, reason=reason),
    }
    return AnswerResult(id="a", status="scored", score=0.875, criteria=criteria)


def test_marks_with_reasons_and_marks_only_read_as_lines() -> None:
    assert reason_of(answer("matches")) == "correctness 4: matches; tone 5: matches"
    assert reason_of(answer(None)) == "correctness 4; tone 5"  # marks only: no "None" in a table
    assert marks_line({}) == ""


def test_checklist_items_read_as_met_or_not() -> None:
    criteria = {
        "item_1": CriterionMark(mark=None, met=True, score=1.0, reason="gives 18"),
        "item_2": CriterionMark(mark=None, met=False, score=0.0, reason=None, kind="pitfall"),
    }
    assert marks_line(criteria) == "item_1 met: gives 18; item_2 not met"
