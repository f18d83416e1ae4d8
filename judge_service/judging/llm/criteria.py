"""The default rubric (used when a request names no criteria), and criteria as fingerprints hash them.

Criteria are on a 1-5 scale (a mark) or binary (a checklist item, met or not; docs/rubrics.md). A
checklist item's `kind` (essential, important, optional, pitfall) sets its default weight; a pitfall
describes a mistake, and being met lowers the answer's score (scoring.py).
"""

from __future__ import annotations

from collections.abc import Sequence

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


# A group without a reference: correctness is judged from the task itself, never against a reference.
REFERENCE_FREE_CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        name="correctness",
        description="Facts, figures and conclusions are right for the task; no errors or inventions.",
        mark_1="wrong, or its conclusion does not follow",
        mark_5="fully correct and well supported",
    ),
    *DEFAULT_CRITERIA[1:],
)


def resolve_criteria(criteria: list[Criterion] | None, *, referenced: bool = True) -> list[Criterion]:
    """The request's criteria, else the default rubric (for a group without a reference, its own)."""
    if criteria:
        return list(criteria)
    return list(DEFAULT_CRITERIA if referenced else REFERENCE_FREE_CRITERIA)


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
