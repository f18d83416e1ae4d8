"""What every store shares, so that no backend re-derives it: the stored document and the row around it,
the page item cut from it, and the opaque paging cursor.

A judgement is stored as one JSON document (its stored form, stored_form/) beside a few indexed columns;
a page item is the same document without what only GET /v1/judgements/{id} returns (the request, the raw
outputs).
A cursor is the store's own monotonic position of the last row on a page (a rowid, a bigserial),
base64url-encoded; callers treat it as opaque and pass it back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime

from judge_service.errors import InvalidGroupError
from judge_service.schemas import JudgeResponse, StoredJudgement
from judge_service.store import stored_form
from judge_service.store.base import IdempotencyKey

_CURSOR_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_POSITION_RE = re.compile(r"[1-9][0-9]{0,18}")


# The judgements table's columns a save writes, in the order `row` gives them (both stores' INSERT); the
# last ones are the summary the run views aggregate (migrations m005 and m007, store/run_views.py).
ROW_COLUMNS = (
    "judgement_id, created_at, run_id, step, group_key, grader,"
    " judge_model, prompt_version, status, doc, idempotency_key, request_hash,"
    " grader_fingerprint, regrade_of, answers, scored, score_sum, score_sq, flat,"
    " order_sensitivity, prompt_tokens, completion_tokens, judge_ms,"
    " canary_kind, canary_outranked, length_bias"
)
ROW_WIDTH = ROW_COLUMNS.count(",") + 1


def now_text() -> str:
    """The time now as both stores keep timestamps: ISO 8601 in UTC."""
    return datetime.now(UTC).isoformat()


def row(judgement: StoredJudgement, idempotency: IdempotencyKey | None) -> tuple[object, ...]:
    """One judgement's values for ROW_COLUMNS."""
    return (
        judgement.judgement_id,
        judgement.created_at.isoformat(),
        judgement.run_id,
        judgement.step,
        judgement.group_key,
        judgement.grader,
        judgement.judge_model,
        judgement.prompt_version,
        judgement.status,
        stored_form.document(judgement),
        idempotency.key if idempotency else None,
        idempotency.request_hash if idempotency else None,
        *summary(judgement),
    )


def summary(judgement: StoredJudgement) -> tuple[object, ...]:
    """The judgement's figures for the run views: fingerprint, regrade_of, answers, scored, sum and sum
    of squares of the scores, flat (>= 2 scored, all equal; None below 2), order sensitivity, tokens,
    judge ms (m005); the canary's kind and whether it outranked the group, and the length bias (m007)."""
    canary = judgement.canaries[0] if judgement.canaries else None
    scores = [a.score for a in judgement.answers if a.score is not None]
    flat = len({round(s, 6) for s in scores}) == 1 if len(scores) >= 2 else None
    return (
        judgement.grader_fingerprint,
        judgement.regrade_of,
        len(judgement.answers),
        len(scores),
        sum(scores) if scores else None,
        sum(s * s for s in scores) if scores else None,
        flat,
        judgement.order_sensitivity,
        judgement.usage.prompt_tokens,
        judgement.usage.completion_tokens,
        judgement.timings.judge_ms,
        None if canary is None else canary.kind,
        None if canary is None else canary.outranked,
        judgement.length_bias,
    )


def load_judgement(doc: str) -> StoredJudgement:
    """A stored document back as a model; accepted as it was stored, never refused."""
    return stored_form.load_judgement(doc)


def page_item(doc: str) -> JudgeResponse:
    return stored_form.page_item(doc)


def encode_cursor(position: int) -> str:
    return base64.urlsafe_b64encode(str(position).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The position a cursor stands for; InvalidGroupError (HTTP 422) for anything no store issued."""
    invalid = InvalidGroupError(
        f"cursor {cursor[:64]!r} is not valid; pass next_cursor from the previous page",
        details={"cursor": cursor[:64]},
    )
    if not _CURSOR_RE.fullmatch(cursor):
        raise invalid
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise invalid from None
    # Only the canonical form encode_cursor produces: digits, no sign, no leading zero.
    if not _POSITION_RE.fullmatch(text) or encode_cursor(int(text)) != cursor:
        raise invalid
    return int(text)
