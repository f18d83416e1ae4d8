"""Expected marks: the probability-weighted mark the judge's log-probabilities give at each mark token.

A judge that writes mark 4 may have put 0.55 on "4" and 0.40 on "5": the integer mark throws that
away, and with four 1-5 criteria many answers of a group tie. The expected mark keeps it:
sum(d * p(d)) / sum(p(d)) over d in 1..5, from the probabilities the engine reports at the position
where the mark's digit was generated, renormalized over the five digits.

How the digit's position is found: the generated tokens' texts are joined, and that JSON text is
scanned for every `"mark": <number>` with the keys that lead to it (answer id and criterion, or
the criterion alone for a per-answer reply); in a marks-only reply (`bare`), for every number under a key,
the key being the criterion. The token covering the digit gives the alternatives; an
alternative counts for digit d when it reads the same as the generated token up to the digit and has d
there, not followed by another digit (so "4", '":4' and "4}" all count for 4, "45" for none).
A checklist item's `"met": true|false` (or, bare, the boolean under its key) is located the same way; its
expected value is the probability of true: p(t) / (p(t) + p(f)) over the alternatives reading "t" or "f"
where the generated token has its first letter.
Whatever cannot be located (no log-probabilities, an unusual reply layout) simply has no expected
mark: the caller says so and uses the integer mark.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from judge_service.backends.base import TokenLogprobs

MARK_DIGITS = "12345"
_BOOLEANS = ("true", "false")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|[{}\[\]:,]|\s+|.')


def mark_positions(text: str, *, bare: bool = False) -> dict[tuple[str, ...], int]:
    """Key path -> character offset of every `"mark"` number in a JSON text; a repeated path is dropped.

    The path is the object keys leading to the mark, without "mark" itself: (answer id, criterion) in
    a group reply, (criterion,) in a per-answer reply. Arrays end the path (their items have no key).
    `bare`: a number directly under any other key is a mark too, its key the criterion (marks only).
    """
    found: dict[tuple[str, ...], int] = {}
    repeated: set[tuple[str, ...]] = set()
    # One frame per open container: (is object, key of this container in its parent or None).
    keys: list[str | None] = []
    objects: list[bool] = []
    pending: str | None = None  # the key just read, waiting for its value
    expecting_key = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            keys.append(pending if objects and objects[-1] else None)
            objects.append(token == "{")
            pending, expecting_key = None, token == "{"
        elif token in ("}", "]"):
            if keys:
                keys.pop()
                objects.pop()
            pending, expecting_key = None, False
        elif token == ",":
            expecting_key = bool(objects) and objects[-1]
        elif token == ":" or token.isspace():
            continue
        elif token.startswith('"') and expecting_key:
            try:
                pending = json.loads(token)
            except ValueError:
                pending = None
            expecting_key = False
        elif (
            (token[0].isdigit() or token in _BOOLEANS)
            and pending is not None
            and objects
            and objects[-1]
            and None not in keys[1:]
        ):
            if pending in ("mark", "met"):
                path = tuple(k for k in keys[1:] if k is not None)
            elif bare:
                path = (*(k for k in keys[1:] if k is not None), pending)
            else:
                continue
            if path in found:
                repeated.add(path)
            found[path] = match.start()
    for path in repeated:
        del found[path]
    return found


def expected_marks(tokens: Sequence[TokenLogprobs], *, bare: bool = False) -> dict[tuple[str, ...], float]:
    """Key path (as in mark_positions) -> expected mark, for every mark whose digit token was found."""
    text = "".join(t.token for t in tokens)
    starts: list[int] = []
    offset = 0
    for t in tokens:
        starts.append(offset)
        offset += len(t.token)
    result: dict[tuple[str, ...], float] = {}
    for path, position in mark_positions(text, bare=bare).items():
        index = _token_at(starts, position)
        value = _expected_at(tokens[index], position - starts[index])
        if value is not None:
            result[path] = value
    return result


def _token_at(starts: list[int], position: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:  # the last token starting at or before the position
        middle = (low + high + 1) // 2
        if starts[middle] <= position:
            low = middle
        else:
            high = middle - 1
    return low


def _expected_at(token: TokenLogprobs, offset: int) -> float | None:
    if token.token[offset : offset + 1] in ("t", "f"):
        return _met_probability(token, offset)
    before = token.token[:offset]
    if token.token[offset : offset + 1] not in tuple(MARK_DIGITS):
        return None
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    weights = dict.fromkeys(MARK_DIGITS, 0.0)
    for text, logprob in alternatives.items():
        if not text.startswith(before) or len(text) <= offset:
            continue
        digit, after = text[offset], text[offset + 1 : offset + 2]
        if digit in weights and not (after.isdigit() or after == "."):
            weights[digit] += math.exp(logprob)
    total = sum(weights.values())
    if total <= 0 or not math.isfinite(total):
        return None
    return sum(int(d) * w for d, w in weights.items()) / total


def _met_probability(token: TokenLogprobs, offset: int) -> float | None:
    """p(true) over the alternatives that read as the generated token up to `offset` and then "t" or "f"
    (the engine's constrained decoding leaves no other value there)."""
    before = token.token[:offset]
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    weights = {"t": 0.0, "f": 0.0}
    for text, logprob in alternatives.items():
        if text.startswith(before) and text[offset : offset + 1] in weights:
            weights[text[offset]] += math.exp(logprob)
    total = weights["t"] + weights["f"]
    if total <= 0 or not math.isfinite(total):
        return None
    return weights["t"] / total
