"""Scoring in one place: the judge's marks -> criterion scores -> an answer's score, and orders combined.

A criterion's score is its mark scaled to 0-1: (mark - 1) / 4 on the 1-5 scale, a checklist item's 1
(met) or 0 as it is (docs/rubrics.md). With `score_from: expected` the expected mark (expected.py) is
scaled instead, which breaks the integer marks' ties; where the backend gave none the integer mark
stands in and the answer's explanation says so.

An answer's score is the weighted mean of its criterion scores over the criteria that are not
pitfalls, less each pitfall's weight times its score, relative to the same total weight, clipped to
0-1 ("Rubrics as Rewards", explicit aggregation); without pitfalls, the plain weighted mean. An answer
the judge did not mark is unscored with the judge's reason, never 0.

Orders combined (`orders=k`, orders.py), per answer and criterion over the orders that marked it:
`score` is the exact mean of the scaled marks, `mark` the mean mark rounded half up (a checklist item:
met in at least half the orders; so `mark` and `score` may disagree slightly), `expected` the mean
expected mark when every such order has one, and `reason` (and the steps of an attribution) the first
order's. An answer is unscored only when no order marked it. Order sensitivity is the mean, over answers
marked in two or more orders, of the spread (max - min) of the answer's score across orders: 0 means the
order changed nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge_service.judging.base import AnswerGrade
from judge_service.judging.llm.parser import Mark, ParsedJudgement
from judge_service.schemas import Criterion


def scaled(criterion: Criterion, value: float) -> float:
    """A mark (or expected mark) as a 0-1 score: (mark - 1) / 4 on 1-5; a binary item's value (1 met,
    0 not, or the probability of met) as it is."""
    return scaled_value(criterion.binary, value)


def scaled_value(binary: bool, value: float) -> float:
    """`scaled` for a criterion known to be a checklist item (`binary`) or not."""
    return value if binary else (value - 1) / 4


def criterion_score(mark: Mark, binary: bool, mean: float | None, *, expected: bool = False) -> float:
    """The 0-1 score of one criterion's mark (a checklist item's when `binary`): with `expected`, the
    scaled expected mark (a checklist item: the probability of met) where the mark has one; else the mean
    over orders when combined (`mean`, combine_orders' score), else the scaled mark."""
    if expected and mark.expected is not None:
        return scaled_value(binary, mark.expected)
    if mean is not None:
        return mean
    return scaled_value(binary, mark.mark)


@dataclass(frozen=True)
class Weighing:
    """A rubric's weights as an answer's score reads them, worked out once for a group's answers."""

    positive: tuple[tuple[str, float], ...]  # (name, weight) of the criteria that are not pitfalls
    pitfalls: tuple[tuple[str, float], ...]
    total: float

    @classmethod
    def of(cls, criteria: Sequence[Criterion]) -> Weighing:
        positive = tuple((c.name, c.effective_weight) for c in criteria if not c.pitfall)
        pitfalls = tuple((c.name, c.effective_weight) for c in criteria if c.pitfall)
        return cls(positive, pitfalls, sum(weight for _, weight in positive))

    def score(self, scores: Mapping[str, float]) -> float:
        gained = sum(scores[name] * weight for name, weight in self.positive)
        lost = sum(scores[name] * weight for name, weight in self.pitfalls)
        return min(1.0, max(0.0, (gained - lost) / self.total))


@dataclass(frozen=True)
class Scoring:
    """How a group's marks become grades under one rubric, worked out once per group: per criterion its
    name, whether it is a checklist item and its kind, the weights, and whether scores come from the
    expected marks."""

    criteria: tuple[Criterion, ...]
    parts: tuple[tuple[str, bool, str | None], ...]
    weighing: Weighing
    checklist: bool
    expected: bool

    @classmethod
    def of(cls, criteria: Sequence[Criterion], *, expected: bool = False) -> Scoring:
        parts = tuple((c.name, c.binary, c.kind) for c in criteria)
        checklist = any(binary for _, binary, _ in parts)
        return cls(tuple(criteria), parts, Weighing.of(criteria), checklist, expected)

    def grade(
        self,
        marks: Mapping[str, Mark] | None,
        *,
        failure: str | None = None,
        means: Mapping[str, float] | None = None,
        no_expected: str | None = None,
    ) -> AnswerGrade:
        """One answer's grade from its marks (None: unscored with `failure`), the mean scores over
        orders where they were combined, and why it has no expected marks where it has none."""
        if marks is None:
            return AnswerGrade(None, failure or "the judge gave no marks for this answer")
        scores: dict[str, float] = {}
        per_criterion: dict[str, dict[str, Any]] = {}
        for name, binary, kind in self.parts:
            mark = marks[name]
            mean = None if means is None else means.get(name)
            score = criterion_score(mark, binary, mean, expected=self.expected)
            scores[name] = score
            per_criterion[name] = _criterion_fields(binary, kind, mark, score)
        return AnswerGrade(
            round(self.weighing.score(scores), 6),
            self._explanation(marks, no_expected),
            criteria=per_criterion,
        )

    def _explanation(self, marks: Mapping[str, Mark], no_expected: str | None) -> str:
        if self.checklist:
            explanation = "rubric: " + _items_line(self.criteria, marks)
        else:
            explanation = "weighted mean of the judge's criterion scores"
        if self.expected:
            explanation += ";" if self.checklist else ""
            explanation += (
                f" from integer marks where expected marks are missing ({no_expected})"
                if no_expected
                else " from expected marks"
            )
        return explanation

    def overall(self, marks: Mapping[str, Mark]) -> float:
        """An answer's score from its integer marks alone (one order's, for order sensitivity)."""
        return self.weighing.score(
            {name: scaled_value(binary, marks[name].mark) for name, binary, _ in self.parts}
        )


def combine_orders(
    parses: Sequence[ParsedJudgement], answer_ids: Sequence[str], criteria: Sequence[Criterion]
) -> tuple[ParsedJudgement, dict[str, dict[str, float]]]:
    """(marks with rounded mean marks and the first reason, answer -> criterion -> mean score)."""
    combined = ParsedJudgement()
    means: dict[str, dict[str, float]] = {}
    for parsed in parses:
        combined.notes.extend(n for n in parsed.notes if n not in combined.notes)
        combined.problems |= parsed.problems
    for answer_id in answer_ids:
        marked = [p.marks[answer_id] for p in parses if answer_id in p.marks]
        if not marked:
            first = next((p.failures[answer_id] for p in parses if answer_id in p.failures), "no marks")
            combined.failures[answer_id] = f"unscored in all {len(parses)} orders; first: {first}"
            continue
        means[answer_id] = {}
        combined.marks[answer_id] = {}
        for criterion in criteria:
            name = criterion.name
            mean_mark = sum(m[name].mark for m in marked) / len(marked)
            means[answer_id][name] = scaled(criterion, mean_mark)
            rounded = math.floor(mean_mark + 0.5)  # half up: 2.5 -> 3, unlike round()
            expected = [m[name].expected for m in marked]
            mean_expected = None if None in expected else round(sum(expected) / len(expected), 6)  # type: ignore[arg-type]
            first_order = marked[0][name]  # its reason and attribution stand for the orders'
            combined.marks[answer_id][name] = Mark(
                rounded, first_order.reason, mean_expected, first_order.steps, first_order.first_wrong
            )
    return combined, means


def order_sensitivity(
    parses: Sequence[ParsedJudgement], criteria: Sequence[Criterion], answer_ids: Sequence[str]
) -> float | None:
    """Mean over `answer_ids` marked in 2+ orders of max - min of their overall score (a canary's spread
    is not the caller's figure); None below 2 orders."""
    if len(parses) < 2:
        return None
    scoring = Scoring.of(criteria)
    spreads = []
    for answer_id in answer_ids:
        overall = [scoring.overall(p.marks[answer_id]) for p in parses if answer_id in p.marks]
        if len(overall) >= 2:
            spreads.append(max(overall) - min(overall))
    return sum(spreads) / len(spreads) if spreads else None


def _criterion_fields(binary: bool, kind: str | None, mark: Mark, score: float) -> dict[str, Any]:
    """A criterion's fields in the answer's result (CriterionMark): the mark, or for a checklist item
    whether it was met and how likely; with attribution, the steps the mark rests on."""
    if mark.steps is not None:
        fields = _criterion_fields(binary, kind, mark._replace(steps=None), score)
        fields["attribution"] = {"steps": list(mark.steps), "first_wrong_step": mark.first_wrong}
        return fields
    if binary:
        return {
            "mark": None,
            "met": bool(mark.mark),
            "met_probability": mark.expected,
            "score": score,
            "reason": mark.reason,
            "kind": kind,
        }
    return {
        "mark": mark.mark,
        "expected_mark": mark.expected,
        "score": score,
        "reason": mark.reason,
        "kind": kind,
    }


def _items_line(criteria: Sequence[Criterion], marks: Mapping[str, Mark]) -> str:
    """Which checklist items were met, pitfalls apart: "met 5 of 7 items (item_1, ...); pitfalls hit:
    item_9"."""
    items = [c for c in criteria if c.binary and not c.pitfall]
    met = [c.name for c in items if marks[c.name].mark]
    line = f"met {len(met)} of {len(items)} items" + (f" ({', '.join(met)})" if met else "")
    hit = [c.name for c in criteria if c.pitfall and marks[c.name].mark]
    pitfalls = [c for c in criteria if c.pitfall]
    if pitfalls:
        line += f"; pitfalls hit: {', '.join(hit) if hit else 'none'} of {len(pitfalls)}"
    scaled_ones = [c.name for c in criteria if not c.binary]
    if scaled_ones:
        line += f"; marked 1-5: {', '.join(scaled_ones)}"
    return line + "; overall = weighted items met less pitfalls hit"
