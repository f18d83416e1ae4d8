"""The default rubric (used when a request names no criteria), and how criteria become scores.

Criteria are on a 1-5 scale (a mark) or binary (a checklist item, met or not; docs/rubrics.md). A
checklist item's `kind` (essential, important, optional, pitfall) sets its default weight; a pitfall
describes a mistake, and being met lowers the answer's score (answer_score).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judge_service.schemas import Criterion

DEFAULT_CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        name="correctness",
        description="Agrees with the reference on facts, figures and conclusions; no errors or inventions.",
        mark_1="wrong or contradicts the reference",
        mark_5="fully correct and consistent with the reference",
    ),
    Criterion(
        name="helpfulness",
        description="Answers what the user actually asked, completely and usefully.",
        mark_1="does not address the request",
        mark_5="fully resolves the request",
    ),
    Criterion(
        name="tone",
        description="Appropriate, respectful and clear for the conversation.",
        mark_1="rude, inappropriate or confusing",
        mark_5="professional and well suited to the user",
    ),
    Criterion(
        name="format",
        description="Well structured and of fitting length; follows any requested format.",
        mark_1="badly structured or ignores the requested format",
        mark_5="clean structure, fitting length, requested format followed",
    ),
)


def resolve_criteria(criteria: list[Criterion] | None) -> list[Criterion]:
    return list(criteria) if criteria else list(DEFAULT_CRITERIA)


def scaled(criterion: Criterion, value: float) -> float:
    """A mark (or expected mark) as a 0-1 score: (mark - 1) / 4 on 1-5; a binary item's value (1 met,
    0 not, or the probability of met) as it is."""
    return scaled_value(criterion.binary, value)


def scaled_value(binary: bool, value: float) -> float:
    """`scaled` for a criterion known to be a checklist item (`binary`) or not."""
    return value if binary else (value - 1) / 4


def answer_score(scores: Mapping[str, float], criteria: Sequence[Criterion]) -> float:
    """An answer's overall score from its criterion scores: the weighted mean over the criteria that are
    not pitfalls, less each pitfall's weight times its score (how surely it was met), relative to the same
    total weight; clipped to 0-1 ("Rubrics as Rewards", explicit aggregation). Without pitfalls: the
    plain weighted mean, as before checklists existed."""
    return Weighing.of(criteria).score(scores)


@dataclass(frozen=True)
class Weighing:
    """A rubric's weights as answer_score reads them, worked out once for a group's answers."""

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


def criterion_config(criterion: Criterion) -> dict[str, object]:
    """A criterion as the grader fingerprint hashes it: the original fields (the weight as applied), and
    scale and kind only where set, so a rubric of 1-5 criteria hashes as it did before checklists."""
    config: dict[str, object] = {
        "name": criterion.name,
        "description": criterion.description,
        "mark_1": criterion.mark_1,
        "mark_5": criterion.mark_5,
        "weight": criterion.effective_weight,
    }
    if criterion.binary:
        config["scale"] = criterion.scale
    if criterion.kind is not None:
        config["kind"] = criterion.kind
    return config


def binary_names(criteria: Sequence[Criterion]) -> frozenset[str]:
    return frozenset(c.name for c in criteria if c.binary)
