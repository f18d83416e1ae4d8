"""What every store shares, so that no backend re-derives it: the stored document, the page item cut
from it, and the opaque paging cursor.

A judgement is stored as one JSON document (StoredJudgement) beside a few indexed columns; a page item
is the same document without what only GET /v1/judgements/{id} returns (the request, the raw outputs).
A cursor is the store's own monotonic position of the last row on a page (a rowid, a bigserial),
base64url-encoded; callers treat it as opaque and pass it back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from judge_service.errors import InvalidGroupError
from judge_service.schemas import STORED, JudgeResponse, StoredJudgement

# Fields of a stored judgement that a page item (JudgeResponse) does not carry.
_STORED_ONLY_KEYS = ("request", "raw_outputs")
_CURSOR_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_POSITION_RE = re.compile(r"[1-9][0-9]{0,18}")


def document(judgement: StoredJudgement) -> str:
    return judgement.model_dump_json()


def load_judgement(doc: str) -> StoredJudgement:
    """A stored document back as a model; accepted as it was stored (STORED context), never refused."""
    return StoredJudgement.model_validate_json(doc, context=STORED)


def page_item(doc: str) -> JudgeResponse:
    data = json.loads(doc)
    for key in _STORED_ONLY_KEYS:
        data.pop(key, None)
    return JudgeResponse.model_validate(data)


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
