"""Marks located in a reply that is not one JSON value (prose or a fence around it, a truncated reply):
one pass over its tokens that reads them as JSON text, carrying its state (inside a string, the keys of
the open objects) from token to token. Each token is looked at once; outside strings one compiled pattern
takes what one token holds of a key and its value, or a whole string, at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

MARK_KEYS = frozenset(("mark", "met"))
# A boolean counts from its first letter where the token reads as it (its rest may come in the next token).
_LITERALS = {"t": "true", "f": "false"}
_BODY = r'[^"\\]*(?:\\.[^"\\]*)*'  # a string's inside: runs without quote or backslash, and escapes
_STRING = f'"{_BODY}"'
# Outside strings, the next thing that matters, as large as one token holds it: a key with its colon
# (and the start of its value, or the whole of a string value), a whole string, or one character.
# Whitespace, colons and the rest of a number or a literal are skipped.
_NEXT = re.compile(
    rf"""(?P<comma>,\s*)?"(?P<key>{_BODY})"\s*:\s*
        (?:(?P<open>[{{\[])|(?P<scalar>[0-9tf-])|(?P<text>{_STRING}))?
    |(?P<string>{_STRING})
    |(?P<char>[{{}}\[\],"0-9tf-])""",
    re.VERBOSE,
)
# Inside a string that runs on from an earlier token: up to its closing quote, or the end of this token.
_STRING_REST = re.compile(_BODY)

Path = tuple[str, ...]


def lexed_locations(texts: Sequence[str], *, bare: bool = False) -> dict[Path, tuple[int, int]]:
    """Key path -> (token index, offset in the token) of every mark's value (mark_locations.py says
    which), read token by token."""
    found: dict[Path, tuple[int, int]] = {}
    repeated: set[Path] = set()
    keys: list[str | None] = []  # per open container: its key in the parent object (None: root, array item)
    objects: list[bool] = []  # per open container: an object (True) or an array
    pending: str | None = None  # the key just read, waiting for its value
    expecting_key = False
    in_string = is_key = escaped = False  # escaped: a token ended inside a string on a backslash
    pieces: list[str] = []  # a string that spans tokens, when it is a key

    def value_at(index: int, start: int, char: str, text: str) -> None:
        """A number or literal starts here: a mark when it is under a mark's key."""
        if not (objects and objects[-1]) or None in keys[1:] or char == "-":  # a negative number: no mark
            return
        literal = _LITERALS.get(char)
        if literal is not None and not literal.startswith(text[start : start + len(literal)]):
            return
        if pending in MARK_KEYS:
            path: Path = tuple(keys[1:])  # type: ignore[arg-type]  # no None, checked above
        elif bare:
            path = (*keys[1:], pending)  # type: ignore[arg-type]
        else:
            return
        if path in found:
            repeated.add(path)
        found[path] = (index, start)

    for index, text in enumerate(texts):
        if not text:  # an empty token (a special one) changes nothing
            continue
        if in_string and not escaped and '"' not in text and "\\" not in text:  # inside a string throughout
            if is_key:
                pieces.append(text)
            continue
        at, size = 0, len(text)
        if escaped:  # the escaped character opens this token
            if is_key:
                pieces.append(text[:1])
            at, escaped = 1, False
        while at < size:
            if in_string:
                end = _STRING_REST.match(text, at).end()  # type: ignore[union-attr]  # always matches
                if is_key:
                    pieces.append(text[at:end])
                if end == size:
                    break
                if text[end] == "\\":  # a backslash that ends the token: its character comes next
                    if is_key:
                        pieces.append("\\")
                    escaped = True
                    break
                in_string, at = False, end + 1
                pending = _key("".join(pieces)) if is_key else None
                continue
            hit = _NEXT.search(text, at)
            if hit is None:
                break
            comma, key, opened, scalar, value, string, char = hit.groups()
            at = hit.end()
            if comma is not None:
                expecting_key = bool(objects) and objects[-1]
            if key is not None and expecting_key:
                pending, expecting_key = _key(key), False
                if opened is not None:
                    char = opened
                else:
                    if scalar is not None and pending is not None:
                        value_at(index, at - 1, scalar, text)
                    if scalar is not None or value is not None:
                        pending = None
                    continue  # else the value comes in a later token
            elif char is None:  # a whole string, not a key: a value, or a key whose colon comes later
                if key is not None:  # a string and a colon where no key belongs: a value, go on after it
                    at = hit.start("key") + len(key) + 1
                    pending = None
                elif expecting_key:
                    pending, expecting_key = _key(string[1:-1]), False
                else:
                    pending = None
                continue
            if char == '"':
                in_string, is_key, expecting_key = True, expecting_key, False
                pieces.clear()
            elif char == "{" or char == "[":
                keys.append(pending if objects and objects[-1] else None)
                objects.append(char == "{")
                pending, expecting_key = None, char == "{"
            elif char == "}" or char == "]":
                if keys:
                    keys.pop()
                    objects.pop()
                pending, expecting_key = None, False
            elif char == ",":
                expecting_key = bool(objects) and objects[-1]
            else:  # a number or a literal starts; its other characters are skipped
                if pending is not None:
                    value_at(index, at - 1, char, text)
                pending = None
    for path in repeated:
        del found[path]
    return found


def _key(raw: str) -> str | None:
    """A key's text from between its quotes; None for one that is not valid JSON."""
    if "\\" not in raw:
        return raw
    try:
        key = json.loads(f'"{raw}"')
    except ValueError:
        return None
    return key if isinstance(key, str) else None
