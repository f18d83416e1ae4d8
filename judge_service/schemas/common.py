"""What every wire model shares: the strict (request) and lenient (response) bases, the bounds, and the
checks of caller text (Text, Unicode) and of JSON fields (Item, bounded depth)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo

ANSWER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"
CRITERION_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
MAX_ANSWERS = 64
MAX_TEXT_CHARS = 20_000
MAX_BATCH_GROUPS = 256
MAX_ORDERS = 4  # answer orders a group may be judged under (judging/llm/orders.py)

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"

MAX_STEP = 2**63 - 1  # the largest integer both stores hold (SQLite INTEGER, PostgreSQL BIGINT)


class StrictModel(BaseModel):
    """What callers send: an unknown field is refused (422), never silently dropped."""

    model_config = ConfigDict(extra="forbid")


class ResponseModel(BaseModel):
    """What the service answers. Unknown fields are ignored when read back, so a client of this version
    keeps reading the replies of a newer service that added fields."""

    model_config = ConfigDict(extra="ignore")


# C0 controls other than tab, newline and carriage return; lone UTF-16 surrogates ("\ud800" in JSON).
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


STORED = {"stored": True}
"""Validation context for judgements read back from the store: accepted once, never refused later."""


def _no_control_chars(value: str, info: ValidationInfo) -> str:
    """Refuse C0 control characters other than tab, newline and carriage return.

    They are never meaningful in a conversation or an answer, can hide text from a human reading a
    run page (terminal escapes), and NUL truncates text in C-based tools; refusing them (instead of
    stripping) keeps what the judge saw identical to what the caller sent. Empty text is allowed.
    A lone surrogate (half of a pair, which JSON's \\u escapes can spell) is no character at all: it
    cannot be stored or sent on as UTF-8, so it is refused here, before any judging.
    """
    if info.context == STORED:
        return value
    found = _CONTROL_CHARS.search(value)
    if found is not None and "\ud800" <= found.group() <= "\udfff":
        raise ValueError(_unpaired(found))
    if found is not None:
        raise ValueError(
            f"contains the control character U+{ord(found.group()):04X} at position {found.start()}; "
            "remove control characters (only tab, newline and carriage return are allowed)"
        )
    return value


Text = Annotated[
    str,
    AfterValidator(_no_control_chars),
    # The same rule in the published schema, for clients and generated code (the validator above gives
    # the error that names the character and its position).
    Field(json_schema_extra={"pattern": r"^[^\x00-\x08\x0B\x0C\x0E-\x1F]*$"}),
]
"""Caller text: any Unicode, empty allowed, no C0 controls except \\t \\n \\r."""

_SURROGATES = re.compile(r"[\ud800-\udfff]")


def _unpaired(found: re.Match[str]) -> str:
    return (
        f"contains an unpaired surrogate U+{ord(found.group()):04X} at position {found.start()}; send "
        "valid Unicode (a character outside the BMP is escaped as a pair, e.g. \\ud83d\\ude00)"
    )


def _whole_characters(value: str) -> str:
    found = _SURROGATES.search(value)
    if found is not None:
        raise ValueError(_unpaired(found))
    return value


Unicode = Annotated[str, AfterValidator(_whole_characters)]
"""A caller's string of any characters but a lone surrogate (see _no_control_chars): for caller strings
that are not Text and have no pattern (pydantic's own checks do not refuse one everywhere)."""

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
    _json_bytes(value)
    return value


def _json_bytes(value: Any) -> int:
    """The size of `value` as UTF-8 JSON; ValueError for what JSON cannot store as sent: NaN or Infinity
    (Python's parser takes them; stored, they would read back as null) and unpaired surrogates (which
    have no UTF-8 spelling)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError("holds NaN or Infinity, which JSON cannot hold; send finite numbers") from None
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"holds an unpaired surrogate U+{ord(text[exc.start]):04X}; send valid Unicode"
        ) from None


JsonSchema = Annotated[dict[str, Any], AfterValidator(_bounded_depth)]
"""A caller's JSON Schema: of bounded depth, finite numbers, whole characters."""

MAX_ITEM_BYTES = 65_536  # `item`, as canonical JSON
MAX_ITEM_DEPTH = 16


def _bounded_item(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    """The task row's grader fields: JSON of bounded size and depth (it is stored with every judgement and
    sent to code graders)."""
    if info.context == STORED:
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_ITEM_DEPTH:
            raise ValueError(f"nests deeper than {MAX_ITEM_DEPTH} levels; flatten the item")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    size = _json_bytes(value)
    if size > MAX_ITEM_BYTES:
        raise ValueError(
            f"is {size} bytes as JSON, over the limit of {MAX_ITEM_BYTES}; keep only the fields graders read"
        )
    return value


Item = Annotated[dict[str, Any], AfterValidator(_bounded_item)]
ITEM_DESCRIPTION = (
    "The task row's grader fields (a JSON object, at most 64 KiB): never shown to the judge or the "
    "answers; code graders receive it and grader templates read it as {{item.field}}. Stored with the "
    "judgement."
)


REFERENCE_DESCRIPTION = (
    "The reference reply to compare with. Null or absent: a group without a reference, judged by comparing "
    "the answers with each other and the task (docs/reference-free.md); graders that compare with a "
    "reference refuse it."
)


def _refuse_duplicates(what: str, values: list[str]) -> None:
    seen: set[str] = set()
    dupes = sorted({v for v in values if v in seen or seen.add(v)})  # type: ignore[func-returns-value]
    if dupes:
        raise ValueError(f"each {what} must be unique; repeated: {', '.join(dupes)}")


class Usage(ResponseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_calls: int = 0
    reasoning_tokens: int = Field(
        default=0, description="Of the completion tokens, those a thinking judge spent thinking."
    )
