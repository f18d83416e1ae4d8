"""Where each mark's value is among the judge's reply tokens: (token index, offset in the token) per key path.

A reply that is one JSON value (what constrained decoding writes) is read by C code but for two short
loops. The parser has decoded it already (objects as dicts, a repeated key's value flagged Duplicate);
walking that document gives, in document order, the key path of every member that can hold a mark: with
reasons, every member under a "mark" or "met" key; marks only (`bare`), every scalar member. One compiled
pattern finds where those members' values start in the text (for reasons, the key itself: `"mark"` with
its closing quote can only be a key in valid JSON, since a quote inside a string is escaped), and the
engine's own token boundaries (their running lengths) turn each position into (token, offset) by
bisection. When the pattern finds exactly as many as the walk, they are the same ones in the same order;
a string that happens to hold the same shape (a reason quoting JSON, a key spelled with escapes) makes
the counts differ, and the reply is read by mark_lexer.py instead, token by token, as is any reply that
is not one JSON value (prose or a fence around it, a truncated reply), with the same results. A document
with a repeated key is decoded again with objects as lists of pairs, where each copy keeps its place. A
Python step per token, as the lexer takes, costs several times more (benchmarks/results/capacity_guard.md,
section 32).

The path is the object keys leading to the mark, without "mark" itself: (answer id, criterion) in a group
reply, (criterion,) in a per-answer reply. Arrays end the path (their items have no key). `bare` (marks
only): a number (not negative) or boolean directly under any other key is a mark too, its key the
criterion. A path found twice is dropped.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

from judge_service.judging.json_text import Decoded, Duplicate
from judge_service.judging.llm.mark_lexer import MARK_KEYS, Path, lexed_locations

# Where a member's value starts (group 1): marks only, after any key (a key's closing quote and colon)
# when the value is a scalar; with reasons, after a "mark" or "met" key, whatever the value.
_MEMBER_SCALAR = re.compile(r'"\s*:\s*([-0-9tfn])')
_MARK_MEMBER = re.compile(r'"(?:mark|met)"\s*:\s*(.)', re.DOTALL)
# What comes before a key's opening quote; a quote after a backslash is inside a string ('"x\\"mark":' is
# the key 'x"mark'). Checked per hit: a look-behind in the pattern makes the whole search 5x slower.
_BEFORE_KEY = frozenset("{, \t\n\r")
_MARK_STARTS = frozenset("0123456789tf")  # a negative number or null is no mark


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


class _Pairs(list[tuple[str, Any]]):
    """An object read as its (key, value) pairs: document order and repeated keys kept."""


_DECODER = json.JSONDecoder(object_pairs_hook=_Pairs, parse_constant=_refuse)
_CONTAINERS = frozenset((dict, _Pairs, list))
Walk = Callable[[Any, "Path | None", "list[Path | None]"], None]  # _mark_paths, _scalar_paths


class _Repeated(Exception):
    """The parser's document holds a repeated key: the pairs must be read."""


def mark_locations(
    texts: Sequence[str], *, bare: bool = False, document: Decoded | None = None
) -> dict[Path, tuple[int, int]]:
    """Key path -> (token index, character offset in that token) of every mark's value (module docstring).
    `document`: the reply as the parser decoded it (duplicates flagged), used when it is these texts (a
    thinking judge's tokens are the reply's after the thinking was split off)."""
    text = "".join(texts)
    # Without a backslash no quote is escaped and no key spelled with escapes: every "mark" key of the
    # document is one the pattern finds, and every hit is a key.
    plain = "\\" not in text
    if bare:
        starts = [hit.start(1) for hit in _MEMBER_SCALAR.finditer(text)]
    elif plain:
        starts = [hit.start(1) for hit in _MARK_MEMBER.finditer(text)]
    else:
        starts = [hit.start(1) for hit in _MARK_MEMBER.finditer(text) if text[hit.start() - 1] in _BEFORE_KEY]
    own = document.value if document is not None and document.text == text else _UNREAD
    paths = _constrained_paths(own, len(starts)) if plain and not bare and own is not _UNREAD else None
    if paths is None:
        paths = _walked_paths(text, own, bare)
    if paths is None or len(starts) != len(paths):  # a string holds the same shape: read token by token
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


_UNREAD = object()  # no decoded document of these texts at hand


def _constrained_paths(document: Any, marks: int) -> list[Path | None] | None:
    """The paths of the layout constrained decoding writes, {criterion: {.., "mark": m}} or
    {answer id: {criterion: {.., "mark": m}}}, without walking every member: the objects holding a
    "mark" or "met" key at depth 1 or 2, in document order (a dict keeps it). The text spells every key
    plainly (no backslash in it), so the pattern finds every mark key of the document and nothing else;
    when the objects are exactly as many as those keys (`marks`), each holds one and there is no other
    anywhere, and the k-th key in the text is the k-th object's. None when neither depth accounts for
    every key (then every member is walked)."""
    if type(document) is not dict:
        return None
    shallow: list[Path | None] = [
        (key,) for key, value in document.items() if type(value) is dict and not MARK_KEYS.isdisjoint(value)
    ]
    if len(shallow) == marks:
        return shallow
    deep: list[Path | None] = [
        (key, inner)
        for key, value in document.items()
        if type(value) is dict
        for inner, leaf in value.items()
        if type(leaf) is dict and not MARK_KEYS.isdisjoint(leaf)
    ]
    return deep if len(deep) == marks else None


def _walked_paths(text: str, document: Any, bare: bool) -> list[Path | None] | None:
    """Every entry (_mark_paths, or _scalar_paths for marks only) from the parser's document, or from the
    pairs where it holds a repeated key or is not at hand; None when the text is not one JSON value."""
    walk = _scalar_paths if bare else _mark_paths
    paths: list[Path | None] = []
    if document is not _UNREAD:
        try:
            walk(document, (), paths)
            return paths
        except _Repeated:
            paths.clear()
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return None
    walk(value, (), paths)  # the pairs hold no Duplicate
    return paths


def mark_positions(text: str, *, bare: bool = False) -> dict[Path, int]:
    """Key path -> character offset of every mark's value in a JSON text (the reply as one token)."""
    return {path: offset for path, (_, offset) in mark_locations((text,), bare=bare).items()}


def _members(value: Any, walk: Walk, paths: list[Path | None]) -> Any:
    """An object's (key, member) pairs, from a dict (the parser's document) or _Pairs; an array's items
    are walked here, below it paths end (keys None), and it gives no members; a scalar none either."""
    kind = type(value)
    if kind is dict:
        return value.items()
    if kind is _Pairs:
        return value
    if kind is list:
        for item in value:
            walk(item, None, paths)
    return ()


def _mark_paths(value: Any, keys: Path | None, paths: list[Path | None]) -> None:
    """Append, in document order, an entry for every member under a "mark" or "met" key below `value`:
    its path when its value is a scalar in an object reached through objects only, else None. `keys`:
    the keys leading to `value`, None below an array."""
    for key, member in _members(value, _mark_paths, paths):
        kind = type(member)
        if kind is Duplicate:
            raise _Repeated
        container = kind in _CONTAINERS
        if key in MARK_KEYS:
            paths.append(None if keys is None or container or kind is str else keys)
        if container:
            _mark_paths(member, None if keys is None or kind is list else (*keys, key), paths)


def _scalar_paths(value: Any, keys: Path | None, paths: list[Path | None]) -> None:
    """Marks only: append, in document order, an entry for every scalar member (not a string) below
    `value`: its path (the mark's key included, but for "mark" or "met") when reached through objects
    only, else None."""
    for key, member in _members(value, _scalar_paths, paths):
        kind = type(member)
        if kind is str:
            continue
        if kind in _CONTAINERS:
            _scalar_paths(member, None if keys is None or kind is list else (*keys, key), paths)
        elif kind is Duplicate:
            raise _Repeated
        elif keys is None:
            paths.append(None)
        else:
            paths.append(keys if key in MARK_KEYS else (*keys, key))
