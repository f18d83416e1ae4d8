"""The default rubric: used when a request names no criteria."""

from __future__ import annotations

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
