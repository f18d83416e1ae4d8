"""Finding the JSON value in a text that may wrap it in prose or a code fence. One reader, one set of rules,
for the judge's replies (llm/parser.py) and the answers the JSON rule graders check (rules/checks.py):

1. the whole text (the only place a bare scalar counts);
2. each ``` fence (optionally tagged json, JSON or jsonc), in order;
3. the first {...} or [...] in the prose that decodes. The inside of a value that failed to decode (a
   truncated reply) is skipped: its inner objects are fragments, not the value. At most
   MAX_START_ATTEMPTS starts are tried, which bounds the work on long prose.

NaN and Infinity are refused (Python's json accepts them; JSON does not), and nesting too deep for the
decoder is a reason, never a crash. With `flag_duplicates`, a key repeated in an object gets the value
`Duplicate()` instead of its last copy, so the judge parser can refuse an answer marked twice.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

_FENCE = re.compile(r"```[ \t]*(?:jsonc|json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
MAX_START_ATTEMPTS = 64
TOO_DEEP = "not readable JSON: nested too deeply (the reader stops near 1,000 levels)"


class Duplicate:
    """The value of a key that an object repeats (with flag_duplicates)."""


class _NonStandardConstant(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonStandardConstant(f"{name} is not valid JSON")


def _flag_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):  # no key repeats: the usual object, built in C
        return obj
    obj = {}
    for key, value in pairs:
        obj[key] = Duplicate() if key in obj else value
    return obj


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_FLAGGING_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_flag_duplicates)


def extract_json(text: str, *, flag_duplicates: bool = False) -> tuple[Any, str | None]:
    """(value, None) when the text holds a JSON value (rules in the module docstring), else (None, reason):
    the decoder's first complaint about the most likely candidate."""
    decoder = _FLAGGING_DECODER if flag_duplicates else _DECODER
    found, value, error = _decode_whole(text, decoder)
    if found:
        return value, None
    fences = _FENCE.findall(text)
    for index, fenced in enumerate(fences):
        found, value, fence_error = _decode_whole(fenced, decoder)
        if found:
            return value, None
        if index == 0:
            error = fence_error
    found, value, embedded_error = _first_embedded_value(text, decoder)
    if found:
        return value, None
    stripped = text.strip()
    if stripped and not fences and not stripped.startswith(("{", "[")):
        error = embedded_error
    return None, error


class Decoded(NamedTuple):
    """A text that is one JSON value (rule 1: nothing around it but whitespace), and that value."""

    text: str
    value: Any


def decode_whole(text: str, *, flag_duplicates: bool = False) -> Decoded | None:
    """The text and its value when the whole text is one JSON value (rule 1 alone), else None."""
    found, value, _ = _decode_whole(text, _FLAGGING_DECODER if flag_duplicates else _DECODER)
    return Decoded(text, value) if found else None


def _decode_whole(text: str, decoder: json.JSONDecoder) -> tuple[bool, Any, str]:
    stripped = text.strip()
    if not stripped:
        return False, None, "no JSON: the text is empty"
    try:
        return True, decoder.decode(stripped), ""
    except ValueError as exc:
        return False, None, f"not valid JSON: {exc}"
    except RecursionError:
        return False, None, TOO_DEEP


def _first_embedded_value(text: str, decoder: json.JSONDecoder) -> tuple[bool, Any, str]:
    first_error = "no JSON object or array found"
    attempts = 0
    depth, in_string, escaped = 0, False, False
    for pos, char in enumerate(text):
        if depth == 0:
            if char not in "{[":
                continue
            try:
                return True, decoder.raw_decode(text, pos)[0], ""
            except (ValueError, RecursionError) as exc:
                if attempts == 0:
                    first_error = TOO_DEEP if isinstance(exc, RecursionError) else f"not valid JSON: {exc}"
                attempts += 1
                if attempts >= MAX_START_ATTEMPTS:
                    break
                depth = 1  # skip this value's inside: its inner objects are fragments
        elif escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return False, None, first_error
