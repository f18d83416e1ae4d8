"""The stored form of a judgement: its answers' results, canaries, timings, thinking and the request as
sent. A grader kind's own parts live in a module of their own (comparison.py, jury.py), beside its wire
models in schemas/."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from judge_service.store.stored_form.base import Stored, UsageV1
from judge_service.store.stored_form.comparison import ComparisonRecordV1, ComparisonTallyV1
from judge_service.store.stored_form.jury import AnswerJuryV1, JurorRecordV1


class StepAttributionV1(Stored):
    steps: list[int]
    first_wrong_step: int | None = None


class CriterionMarkV1(Stored):
    mark: int | None  # null: a binary item (`met`)
    expected_mark: float | None = None
    met: bool | None = None
    met_probability: float | None = None
    score: float
    reason: str | None = None  # null: judged with reasons "none"
    kind: str | None = None
    attribution: StepAttributionV1 | None = None  # null: judged without attribution "steps"


class RubricUseV1(Stored):
    id: str
    version: int
    sha256: str


class TermScoreV1(Stored):
    grader: str
    weight: float
    score: float | None
    explanation: str
    details: dict[str, Any] | None = None


class AnswerResultV1(Stored):
    id: str
    status: str
    score: float | None
    criteria: dict[str, CriterionMarkV1] | None = None
    terms: list[TermScoreV1] | None = None
    explanation: str | None = None
    error: str | None = None
    comparison: ComparisonTallyV1 | None = None  # comparison graders only
    scored_by: str | None = None  # cascades only
    jury: AnswerJuryV1 | None = None  # the jury grader only


class CanaryResultV1(AnswerResultV1):
    kind: str
    text: str
    outranked: bool | None = None
    shown_at: list[int] | None = None


class TimingsV1(Stored):
    queue_ms: float = 0.0
    judge_ms: float = 0.0
    total_ms: float = 0.0


class ThinkingAttemptV1(Stored):
    text: str | None
    text_truncated: bool = False
    tokens: int | None
    budget: int | None
    budget_exhausted: bool | None
    ended: bool
    finish_reason: str | None
    recovered: bool = False


class StoredJudgementV1(Stored):
    judgement_id: str
    created_at: datetime
    status: str
    grader: str
    judge_model: str | None
    prompt_version: str | None
    run_id: str | None
    step: int | None
    group_key: str | None
    answers: list[AnswerResultV1]
    usage: UsageV1
    timings: TimingsV1
    attempts: int
    order_seed: int | None = None
    answer_orders: list[list[str]] | None = None
    order_sensitivity: float | None = None
    grader_fingerprint: str | None = None
    regrade_of: str | None = None
    cascade: str | None = None  # cascades only: rule_only or judged
    rubric: RubricUseV1 | None = None
    reasons: str | None = None
    length_bias: float | None = None
    request: dict[str, Any]
    raw_outputs: list[str]
    thinking: list[ThinkingAttemptV1] | None = None
    canaries: list[CanaryResultV1] | None = None
    # The API key's name (api/middleware/keys.py); null without keys, and in judgements from before.
    caller: str | None = None
    comparisons: list[ComparisonRecordV1] | None = None  # comparison graders only
    jury: list[JurorRecordV1] | None = None  # the jury grader only
