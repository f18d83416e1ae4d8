"""Blend the per-term grades of ONE answer into its score.

Rules, in order:
  1. A term with `applies=False` is dropped: its grader does not apply to the group's reference (the
     numbers grader on a reference without figures). The remaining weights are scaled by
     total / remaining so that their sum stays the original total; judge+numbers on a reference without
     figures is therefore exactly the judge score. If no term applies, the blend is None.
  2. A term that applies but has score None failed for this answer (e.g. the judge left it unscored):
     the blend is None, never 0, and the explanation names the term.
  3. Otherwise score = sum(weight * score). Weights are NOT normalized: weights 2 and 1 give a score in
     0..3, because a trainer's advantage depends on that scale.

For rule graders a None score always means "does not apply" (it depends on the reference alone, so it is
the same for every answer of a group): build their terms with `TermGrade.from_rule`. For the judge a None
means failure: build its term with `applies=True`.

ValueError for a weight that is not finite and positive, or an applying score outside [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from judge_service.judging.base import Grade


@dataclass(frozen=True)
class TermGrade:
    grader: str
    weight: float
    grade: Grade
    applies: bool = True

    @classmethod
    def from_rule(cls, grader: str, weight: float, grade: Grade) -> TermGrade:
        """A rule grader's term: it applies exactly when it produced a score."""
        return cls(grader, weight, grade, applies=grade.score is not None)


class BlendResult(NamedTuple):
    score: float | None
    explanation: str


def blend(terms: Sequence[TermGrade]) -> BlendResult:
    """One answer's blended score and a one-line explanation (rules in the module docstring)."""
    _check(terms)
    weights = effective_weights(terms)
    applying = [(term, weight) for term, weight in zip(terms, weights, strict=True) if weight is not None]
    dropped = "".join(f"; {term.grader} does not apply" for term in terms if not term.applies)
    if not applying:
        return BlendResult(None, "no grader applies" + dropped)
    failed = [term for term, _ in applying if term.grade.score is None]
    if failed:
        reasons = ", ".join(f"{term.grader} failed ({term.grade.explanation})" for term in failed)
        return BlendResult(None, f"unscored: {reasons}")
    score = math.fsum(weight * _score(term) for term, weight in applying)
    parts = " + ".join(f"{term.grader} {_score(term):.2f} x{weight:.3g}" for term, weight in applying)
    return BlendResult(score, f"{parts}{dropped}")


def effective_weights(terms: Sequence[TermGrade]) -> list[float | None]:
    """Each term's weight after rescaling (rule 1); None for a dropped term."""
    total = math.fsum(term.weight for term in terms)
    remaining = math.fsum(term.weight for term in terms if term.applies)
    # weight / remaining first: a lone remaining term gets exactly `total`.
    return [term.weight / remaining * total if term.applies else None for term in terms]


def _score(term: TermGrade) -> float:
    if term.grade.score is None:  # unreachable after the failure check; keeps the type precise
        raise ValueError(f"{term.grader} has no score")
    return term.grade.score


def _check(terms: Sequence[TermGrade]) -> None:
    for term in terms:
        if not (math.isfinite(term.weight) and term.weight > 0):
            raise ValueError(f"blend term {term.grader!r}: weight must be finite and > 0, got {term.weight}")
        score = term.grade.score
        if term.applies and score is not None and not 0.0 <= score <= 1.0:
            raise ValueError(f"blend term {term.grader!r}: score must be in [0, 1], got {score}")
