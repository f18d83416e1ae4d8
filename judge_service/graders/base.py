"""The interface every rule-based grader implements, and the result it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from judge_service.schemas import RuleOptions


@dataclass(frozen=True)
class Grade:
    """One answer's grade from one grader.

    score is in [0, 1], or None when the grader does not apply (e.g. the numbers grader on a reference
    without figures) or could not grade; `explanation` always says why, in a short sentence.
    """

    score: float | None
    explanation: str


class RuleGrader(Protocol):
    name: str

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade: ...
