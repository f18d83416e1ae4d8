"""Where each mark's value is among the judge's reply tokens: (token index, offset in the token) per key path.

A reply that is one JSON value (what constrained decoding writes) is read by C code but for two short
loops: the reply's text is decoded once, with objects kept as lists of pairs so that document order and
repeated keys survive, which gives the key path of every scalar value that is an object member, in
document order; one compiled pattern finds where such values start (a key's closing quote, the colon,
the value), and the engine's own token boundaries (their running lengths) turn each position into
(token, offset) by bisection. Every member's value matches the pattern, so when the pattern finds exactly
as many as the document holds, they are the same ones in the same order; a string that happens to hold
the same shape (a reason quoting JSON) makes the counts differ, and the reply is read by mark_lexer.py
instead, token by token, as is any reply that is not one JSON value (prose or a fence around it, a
truncated reply), with the same results. A Python step per token or per JSON element, as the lexer
takes, costs several times more (benchmarks/results/capacity_guard.md, section 32).

The path is the object keys leading to the mark, without "mark" itself: (answer id, criterion) in a group
reply, (criterion,) in a per-answer reply. Arrays end the path (their items have no key). `bare` (marks
only): a number (not negative) or boolean directly under any other key is a mark too, its key the
criterion. A path found twice is dropped.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from judge_service.judging.llm.mark_lexer import MARK_KEYS, Path, lexed_locations

# A key's closing quote, its colon and the first character of a scalar value (group 1).
_MEMBER_SCALAR = re.compile(r'"\s*:\s*([-0-9tfn])')
_MARK_STARTS = frozenset("0123456789tf")  # a negative number or null is no mark


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


# Objects as lists of (key, value) pairs: document order and repeated keys kept.
_DECODER = json.JSONDecoder(object_pairs_hook=list, parse_constant=_refuse)


def mark_locations(texts: Sequence[str], *, bare: bool = False) -> dict[Path, tuple[int, int]]:
    """Key path -> (token index, character offset in that token) of every mark's value (module docstring)."""
    text = "".join(texts)
    try:
        document = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return lexed_locations(texts, bare=bare)
    paths: list[Path | None] = []
    _member_paths(document, (), paths, bare)
    starts = [hit.start(1) for hit in _MEMBER_SCALAR.finditer(text)]
    if len(starts) != len(paths):  # a string holds the same shape: read token by token
        return lexed_locations(texts, bare=bare)
    ends = list(accumulate(map(len, texts)))
    found: dict[Path, tuple[int, int]] = {}
    repeated: set[Path] = set()
    for position, path in zip(starts, paths, strict=True):
        if path is None or text[position] not in _MARK_STARTS:
            continue
        index = bisect_right(ends, position)
        if path in found:
            repeated.add(path)
        found[path] = (index, position - (ends[index - 1] if index else 0))
    for path in repeated:
        del found[path]
    return found


def mark_positions(text: str, *, bare: bool = False) -> dict[Path, int]:
    """Key path -> character offset of every mark's value in a JSON text (the reply as one token)."""
    return {path: offset for path, (_, offset) in mark_locations((text,), bare=bare).items()}


def _is_object(value: Any) -> bool:
    # Arrays decode to lists of values, objects to lists of (key, value) tuples.
    return bool(value) and type(value[0]) is tuple


def _member_paths(container: Any, keys: Path | None, paths: list[Path | None], bare: bool) -> None:
    """Append the path of every scalar value that is an object member under `container`, in document
    order (None: not a mark's place). `keys`: the keys leading to the container, None below an array."""
    if not isinstance(container, list):
        return
    if not _is_object(container):
        for item in container:
            if isinstance(item, list):
                _member_paths(item, None, paths, bare)
        return
    for key, value in container:
        if isinstance(value, list):
            _member_paths(value, None if keys is None else (*keys, key), paths, bare)
        elif isinstance(value, str):
            continue
        elif keys is None:
            paths.append(None)
        elif key in MARK_KEYS:
            paths.append(keys)
        else:
            paths.append((*keys, key) if bare else None)
