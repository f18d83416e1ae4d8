"""The stored form of a judgement: the JSON document each store keeps, models of their own apart from the
wire models (judgement.py, and a module per grader kind with parts of its own: comparison.py, jury.py),
with converters both ways.

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
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from judge_service.schemas import STORED, JudgeResponse, StoredJudgement
from judge_service.store.stored_form.base import Stored, UsageV1
from judge_service.store.stored_form.comparison import ComparisonRecordV1, ComparisonTallyV1
from judge_service.store.stored_form.judgement import (
    AnswerResultV1,
    CanaryResultV1,
    CriterionMarkV1,
    RubricUseV1,
    StoredJudgementV1,
    TermScoreV1,
    ThinkingAttemptV1,
    TimingsV1,
)
from judge_service.store.stored_form.jury import AnswerJuryV1, JurorRecordV1

__all__ = [
    "NOT_STORED",
    "STORED_ONLY",
    "AnswerJuryV1",
    "AnswerResultV1",
    "CanaryResultV1",
    "ComparisonRecordV1",
    "ComparisonTallyV1",
    "CriterionMarkV1",
    "JurorRecordV1",
    "RubricUseV1",
    "StoredJudgementV1",
    "TermScoreV1",
    "ThinkingAttemptV1",
    "TimingsV1",
    "UsageV1",
    "document",
    "dump",
    "from_stored",
    "load",
    "load_judgement",
    "page_item",
    "stored_pairs",
    "to_stored",
]

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
        inner_stored = _model_in(stored.model_fields[name].annotation, Stored)
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


def stored_pairs(
    wire: type[BaseModel] = StoredJudgement, stored: type[BaseModel] = StoredJudgementV1
) -> list[tuple[type[BaseModel], type[BaseModel]]]:
    """Every (wire model, stored model) pair the stored judgement holds, at every depth: what
    tests/store/test_stored_forms.py checks field by field, so a grader kind's new pair is checked too."""
    pairs = [(wire, stored)]
    for name, field in stored.model_fields.items():
        inner_stored = _model_in(field.annotation, Stored)
        inner_wire = (
            _model_in(wire.model_fields[name].annotation, BaseModel) if name in wire.model_fields else None
        )
        if inner_stored is not None and inner_wire is not None:
            pairs += [p for p in stored_pairs(inner_wire, inner_stored) if p not in pairs]
    return pairs


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
