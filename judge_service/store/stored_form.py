"""The stored form of a judgement: the JSON document each store keeps, a model of its own apart from the
wire models, with converters both ways.

The rule: what is stored is what these models declare, nothing else. A field added to the wire
(`JudgeResponse`, `AnswerResult`, ...) is not stored until it is added here too; `NOT_STORED` names the
wire fields that are deliberately not kept, and tests/store/test_stored_forms.py fails for a wire field in
neither. A field added here must have a default (documents written before it lack it), and every document
any build ever wrote must keep loading: tests/data holds databases written by earlier builds, loaded
through these models by that test (add one when the form changes).

Versions: the documents written so far are form 1 and carry no `form` key. A change that old documents
cannot be read by default values (a renamed or re-typed field) is a form 2: a new model with `form: 2`,
and `load_judgement` dispatches on the key (form 1 is read straight into the wire model, one pass). The
caller's request is kept as the validated request's JSON: a regrade replays it as it was sent, so it is
stored whole, and read back without the checks new requests get.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from judge_service.schemas import STORED, JudgeResponse, StoredJudgement


class _Stored(BaseModel):
    # extra="ignore": a document written by a newer build (a field this build does not know) still loads.
    model_config = ConfigDict(extra="ignore", from_attributes=True)


class CriterionMarkV1(_Stored):
    mark: int | None  # null: a binary item (`met`)
    expected_mark: float | None = None
    met: bool | None = None
    met_probability: float | None = None
    score: float
    reason: str | None = None  # null: judged with reasons "none"
    kind: str | None = None


class RubricUseV1(_Stored):
    id: str
    version: int
    sha256: str


class TermScoreV1(_Stored):
    grader: str
    weight: float
    score: float | None
    explanation: str
    details: dict[str, Any] | None = None


class ComparisonTallyV1(_Stored):
    wins: int
    losses: int
    ties: int
    failed: int
    byes: int | None = None


class AnswerJuryV1(_Stored):
    scores: dict[str, float]
    missing: dict[str, str] = {}
    spread: float | None = None
    aggregate: str


class AnswerResultV1(_Stored):
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


class UsageV1(_Stored):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_calls: int = 0
    reasoning_tokens: int = 0


class TimingsV1(_Stored):
    queue_ms: float = 0.0
    judge_ms: float = 0.0
    total_ms: float = 0.0


class ThinkingAttemptV1(_Stored):
    text: str | None
    text_truncated: bool = False
    tokens: int | None
    budget: int | None
    budget_exhausted: bool | None
    ended: bool
    finish_reason: str | None
    recovered: bool = False


class ComparisonRecordV1(_Stored):
    first: str
    second: str
    verdict: dict[str, int] | None
    preference: float | None
    reason: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    round: int | None = None


class JurorRecordV1(_Stored):
    name: str
    model: str
    weight: float
    called: bool
    escalation: bool = False
    prompt_version: str | None = None
    error: str | None = None
    raw_outputs: list[str] = []
    usage: UsageV1 = UsageV1()
    judge_ms: float = 0.0


class StoredJudgementV1(_Stored):
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


# Wire fields that are not stored in the judgement's document, by wire model. Reasons written afterwards
# live in a table of their own (migration m008_explained_reasons): the judge's reply is never rewritten.
NOT_STORED: dict[str, frozenset[str]] = {"StoredJudgement": frozenset({"explained"})}

# What a page item (JudgeResponse) leaves out of the document: only GET /v1/judgements/{id} returns these.
STORED_ONLY = frozenset({"request", "raw_outputs", "thinking", "canaries", "caller", "comparisons", "jury"})


def _left_out(wire: type[BaseModel], stored: type[BaseModel]) -> dict[str, Any]:
    """The wire model's fields that the stored model does not declare, at every depth, as pydantic's
    `exclude` tree: what a wire judgement's dump must leave out to hold only what the stored form declares."""
    tree: dict[str, Any] = {}
    for name, field in wire.model_fields.items():
        if name not in stored.model_fields:
            tree[name] = True
            continue
        inner_wire = _model_in(field.annotation, BaseModel)
        inner_stored = _model_in(stored.model_fields[name].annotation, _Stored)
        if inner_wire is None or inner_stored is None:
            continue
        below = _left_out(inner_wire, inner_stored)
        if below:
            tree[name] = {"__all__": below} if _is_container(field.annotation) else below
    return tree


def _model_in(annotation: Any, kind: type[BaseModel]) -> type[BaseModel] | None:
    """The model of `kind` an annotation holds (`UsageV1`, `list[AnswerResult]`, `dict[str, ...] | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, kind):
        return annotation
    for argument in get_args(annotation):
        found = _model_in(argument, kind)
        if found is not None:
            return found
    return None


def _is_container(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, dict):
        return True
    return any(_is_container(argument) for argument in get_args(annotation))


# Computed once: a small exclude tree costs the dump far less than an include tree of every stored field.
_LEFT_OUT = _left_out(StoredJudgement, StoredJudgementV1)
_LEFT_OUT_AND_CANARIES = {**_LEFT_OUT, "canaries": True}


def document(judgement: StoredJudgement) -> str:
    """The JSON a store writes for a judgement: the wire judgement's fields that the stored form declares
    (the dump runs in pydantic's core; tests/store/test_stored_forms.py checks it equals the stored
    model's own dump). A judgement without canaries is stored without the key, as before canaries."""
    return judgement.model_dump_json(
        exclude=_LEFT_OUT_AND_CANARIES if judgement.canaries is None else _LEFT_OUT
    )


def dump(stored: StoredJudgementV1) -> str:
    """A stored form's document, as `document` writes it (no `canaries` key when there are none)."""
    return stored.model_dump_json(exclude={"canaries"} if stored.canaries is None else None)


def to_stored(judgement: StoredJudgement) -> StoredJudgementV1:
    fields = {name: getattr(judgement, name) for name in StoredJudgementV1.model_fields}
    return StoredJudgementV1.model_validate({**fields, "request": judgement.request.model_dump(mode="json")})


def load(doc: str | bytes) -> StoredJudgementV1:
    """A stored document as its stored form."""
    return StoredJudgementV1.model_validate_json(doc)


def load_judgement(doc: str | bytes) -> StoredJudgement:
    """A stored document as the wire judgement, accepted as it was stored (STORED context: never refused
    by a check added after it was written). Form 1 documents are the wire judgement's fields, read in one
    pass; a later form converts here, through its own model, before this."""
    return StoredJudgement.model_validate_json(doc, context=STORED)


def from_stored(stored: StoredJudgementV1) -> StoredJudgement:
    """The wire judgement of a stored one."""
    return StoredJudgement.model_validate(stored, from_attributes=True, context=STORED)


def page_item(doc: str | bytes) -> JudgeResponse:
    """The page item of a stored judgement: everything but the request and the raw outputs."""
    data = json.loads(doc)
    for key in STORED_ONLY:
        data.pop(key, None)
    return JudgeResponse.model_validate(data, context=STORED)
