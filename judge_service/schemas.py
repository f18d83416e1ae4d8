"""Wire models: what callers send and receive. Strict (unknown fields are refused) and bounded."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, model_validator

ANSWER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"
CRITERION_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
MAX_ANSWERS = 64
MAX_TEXT_CHARS = 20_000
MAX_BATCH_GROUPS = 256


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


STORED = {"stored": True}
"""Validation context for judgements read back from the store: accepted once, never refused later."""


def _no_control_chars(value: str, info: ValidationInfo) -> str:
    """Refuse C0 control characters other than tab, newline and carriage return.

    They are never meaningful in a conversation or an answer, can hide text from a human reading a
    run page (terminal escapes), and NUL truncates text in C-based tools; refusing them (instead of
    stripping) keeps what the judge saw identical to what the caller sent. Empty text is allowed.
    """
    if info.context == STORED:
        return value
    found = _CONTROL_CHARS.search(value)
    if found is not None:
        raise ValueError(
            f"contains the control character U+{ord(found.group()):04X} at position {found.start()}; "
            "remove control characters (only tab, newline and carriage return are allowed)"
        )
    return value


Text = Annotated[str, AfterValidator(_no_control_chars)]
"""Caller text: any Unicode, empty allowed, no C0 controls except \\t \\n \\r."""

MAX_JSON_SCHEMA_DEPTH = 64


def _bounded_depth(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    """Refuse a JSON Schema nested deeper than MAX_JSON_SCHEMA_DEPTH: real schemas stay far below it,
    and much deeper ones make validation and storage recurse past Python's limits."""
    if info.context == STORED:
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:  # iterative: the check itself must not recurse
        node, depth = stack.pop()
        if depth > MAX_JSON_SCHEMA_DEPTH:
            raise ValueError(
                f"nests deeper than {MAX_JSON_SCHEMA_DEPTH} levels; flatten the schema (use $defs and $ref)"
            )
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return value


# --------------------------------------------------------------------------- requests


class ChatMessage(StrictModel):
    role: Literal["system", "user", "assistant"]
    content: Text = Field(max_length=MAX_TEXT_CHARS)


class Answer(StrictModel):
    id: str = Field(
        pattern=ANSWER_ID_PATTERN,
        description="Caller-given id, unique in the group: 1-64 of letters, digits, '_', '.', ':', '-'.",
    )
    text: Text = Field(
        max_length=MAX_TEXT_CHARS, description="The policy model's answer, verbatim; may be empty."
    )


class Criterion(StrictModel):
    # Frozen, so hashable: the rendered rubric and the grader fingerprint are cached per criteria.
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        pattern=CRITERION_NAME_PATTERN, description="Lower-case identifier, e.g. 'correctness'."
    )
    description: Text = Field(min_length=1, max_length=500)
    mark_1: Text = Field(min_length=1, max_length=300, description="What a mark of 1 means.")
    mark_5: Text = Field(min_length=1, max_length=300, description="What a mark of 5 means.")
    weight: float = Field(default=1.0, gt=0, le=100, description="Weight in the answer's overall score.")


class GraderTerm(StrictModel):
    grader: str = Field(min_length=1, max_length=64, description="Name of a registered single grader.")
    weight: float = Field(gt=0, le=100, description="Not normalized: the blend is the plain weighted sum.")


class RuleOptions(StrictModel):
    """Options read by the rule-based graders; each grader documents which ones it uses."""

    case_sensitive: bool = False
    normalize_whitespace: bool = True
    unicode_normalization: Literal["NFC", "NFKC", "none"] = "NFKC"
    json_schema: Annotated[dict[str, Any], AfterValidator(_bounded_depth)] | None = Field(
        default=None, description="For 'json': validate against it."
    )
    labels: list[Text] | None = Field(
        default=None, max_length=256, description="For 'label': allowed labels."
    )


class JudgeRequest(StrictModel):
    conversation: list[ChatMessage] = Field(min_length=1, max_length=64)
    reference: Text = Field(max_length=MAX_TEXT_CHARS, description="The reference reply to compare with.")
    answers: list[Answer] = Field(min_length=1, max_length=MAX_ANSWERS)
    criteria: list[Criterion] | None = Field(
        default=None,
        min_length=1,
        max_length=8,
        description="Default: correctness, helpfulness, tone, format.",
    )
    grader: str = Field(default="judge", min_length=1, max_length=64)
    terms: list[GraderTerm] | None = Field(
        default=None, min_length=1, max_length=8, description="Weighted custom blend; overrides `grader`."
    )
    options: RuleOptions = Field(default_factory=RuleOptions)
    run_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
    step: int | None = Field(default=None, ge=0)
    group_key: Text | None = Field(default=None, max_length=256)
    seed: int | None = Field(
        default=None, ge=0, le=2**32 - 1, description="Seeds the shuffled answer order; default: from the id."
    )
    orders: int = Field(
        default=1, ge=1, le=4, description="Judge under this many answer orders and average (position bias)."
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> JudgeRequest:
        _refuse_duplicates("answer id", [a.id for a in self.answers])
        if self.criteria is not None:
            _refuse_duplicates("criterion name", [c.name for c in self.criteria])
        return self


def _refuse_duplicates(what: str, values: list[str]) -> None:
    seen: set[str] = set()
    dupes = sorted({v for v in values if v in seen or seen.add(v)})  # type: ignore[func-returns-value]
    if dupes:
        raise ValueError(f"each {what} must be unique; repeated: {', '.join(dupes)}")


# --------------------------------------------------------------------------- responses


class CriterionMark(StrictModel):
    mark: int = Field(ge=1, le=5)
    score: float = Field(ge=0, le=1, description="(mark - 1) / 4")
    reason: str


class TermScore(StrictModel):
    grader: str
    weight: float
    score: float | None = Field(description="null when the term did not apply or failed")
    explanation: str


AnswerStatus = Literal["scored", "unscored"]
GroupStatus = Literal["ok", "partial", "failed"]


class AnswerResult(StrictModel):
    id: str
    status: AnswerStatus
    score: float | None = Field(description="Overall 0-1; null when unscored (never 0 for a failure).")
    criteria: dict[str, CriterionMark] | None = None
    terms: list[TermScore] | None = None
    explanation: str | None = None
    error: str | None = Field(default=None, description="Why the answer is unscored.")


class Usage(StrictModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_calls: int = 0


class Timings(StrictModel):
    queue_ms: float = 0.0
    judge_ms: float = 0.0
    total_ms: float = 0.0


class JudgeResponse(StrictModel):
    judgement_id: str
    created_at: datetime
    status: GroupStatus
    grader: str
    judge_model: str | None
    prompt_version: str | None
    run_id: str | None
    step: int | None
    group_key: str | None
    answers: list[AnswerResult]
    usage: Usage
    timings: Timings
    attempts: int = Field(description="Judge calls made for this group (1 + retries).")
    # Position-bias control (quality/orders.py); null for judgements made before it, or without the judge.
    order_seed: int | None = Field(default=None, description="Seed of the shuffled answer order.")
    answer_orders: list[list[str]] | None = Field(
        default=None, description="The answer ids in the order the judge saw them, one list per order."
    )
    order_sensitivity: float | None = Field(
        default=None, description="Mean spread (max - min) of answers' scores across orders; orders > 1."
    )
    grader_fingerprint: str | None = Field(
        default=None, description="Hash of the grader configuration; equal means scored the same way."
    )
    regrade_of: str | None = Field(default=None, description="The judgement this one re-scores, if any.")


class StoredJudgement(JudgeResponse):
    """What GET /v1/judgements/{id} returns: the result plus what produced it."""

    request: JudgeRequest
    raw_outputs: list[str] = Field(description="The judge's raw text, one entry per attempt.")

    def response(self) -> JudgeResponse:
        """The reply to the caller: everything but the request and the raw outputs. Built from the
        already-validated field values (no dump and re-validation of the whole tree)."""
        fields = JudgeResponse.model_fields
        return JudgeResponse.model_validate({name: getattr(self, name) for name in fields})


class JudgementPage(StrictModel):
    items: list[JudgeResponse]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class ErrorBody(StrictModel):
    code: str
    message: str
    details: dict[str, Any] | list[Any] | None = None


class BatchJudgeRequest(StrictModel):
    groups: list[JudgeRequest] = Field(min_length=1, max_length=MAX_BATCH_GROUPS)


class BatchItem(StrictModel):
    """Exactly one of `judgement` and `error` is set."""

    judgement: JudgeResponse | None = None
    error: ErrorBody | None = None


class BatchJudgeResponse(StrictModel):
    results: list[BatchItem] = Field(description="One entry per group, in request order.")


class ErrorResponse(StrictModel):
    error: ErrorBody


PositiveLimit = Annotated[int, Field(ge=1, le=500)]
