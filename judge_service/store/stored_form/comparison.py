"""The stored form of comparison grading (schemas/comparison.py): each answer's tally and each pair's
verdict."""

from __future__ import annotations

from judge_service.store.stored_form.base import Stored


class ComparisonTallyV1(Stored):
    wins: int
    losses: int
    ties: int
    failed: int
    byes: int | None = None


class ComparisonRecordV1(Stored):
    first: str
    second: str
    verdict: dict[str, int] | None
    preference: float | None
    reason: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    round: int | None = None
