"""The stored form of the jury grader (schemas/jury.py): each answer's scores by judge and each juror's
call."""

from __future__ import annotations

from pydantic import Field

from judge_service.store.stored_form.base import Stored, UsageV1


class AnswerJuryV1(Stored):
    scores: dict[str, float]
    missing: dict[str, str] = Field(default_factory=dict)
    spread: float | None = None
    aggregate: str


class JurorRecordV1(Stored):
    name: str
    model: str
    weight: float
    called: bool
    escalation: bool = False
    prompt_version: str | None = None
    error: str | None = None
    raw_outputs: list[str] = Field(default_factory=list)
    usage: UsageV1 = Field(default_factory=UsageV1)
    judge_ms: float = 0.0
