"""Expected marks: the probability-weighted mark the judge's log-probabilities give at each mark token.

A judge that writes mark 4 may have put 0.55 on "4" and 0.40 on "5": the integer mark throws that
away, and with four 1-5 criteria many answers of a group tie. The expected mark keeps it:
sum(d * p(d)) / sum(p(d)) over d in 1..5, from the probabilities the engine reports at the position
where the mark's digit was generated, renormalized over the five digits.

Where each mark's digit was generated comes from mark_locations.py: the token (and the offset in it)
where the value under each `"mark"` key starts, with the keys that lead to it (answer id and criterion,
or the criterion alone for a per-answer reply; in a marks-only reply, `bare`, every number under a key).
That token gives the alternatives; an alternative counts for digit d when it reads the same as the
generated token up to the digit and has d there, not followed by another digit (so "4", '":4' and "4}"
all count for 4, "45" for none).
A checklist item's `"met": true|false` (or, bare, the boolean under its key) is located the same way; its
expected value is the probability of true: p(t) / (p(t) + p(f)) over the alternatives reading "t" or "f"
where the generated token has its first letter.
Whatever cannot be located (no log-probabilities, an unusual reply layout) simply has no expected
mark: the caller says so and uses the integer mark.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from judge_service.backends.base import TokenLogprobs
from judge_service.judging.json_text import Decoded
from judge_service.judging.llm.mark_locations import Path, mark_locations

MARK_DIGITS = "12345"
_DIGITS = frozenset(MARK_DIGITS)
_MET = frozenset("tf")
_DIGIT_VALUES = {digit: int(digit) for digit in MARK_DIGITS}  # an alternative that is the digit alone
_TOKEN_TEXT = operator.attrgetter("token")


def expected_marks(
    tokens: Sequence[TokenLogprobs], *, bare: bool = False, document: Decoded | None = None
) -> dict[Path, float]:
    """Key path (as in mark_locations) -> expected mark, for every mark whose digit token was found.
    `document`: the reply as the parser decoded it, if it did (mark_locations)."""
    result: dict[Path, float] = {}
    texts = list(map(_TOKEN_TEXT, tokens))
    for path, (index, offset) in mark_locations(texts, bare=bare, document=document).items():
        value = _expected_at(tokens[index], offset)
        if value is not None:
            result[path] = value
    return result


def _expected_at(token: TokenLogprobs, offset: int) -> float | None:
    generated = token.token
    char = generated[offset : offset + 1]
    if char in _MET:
        return _met_probability(token, offset)
    if char not in _DIGITS:
        return None
    before = generated[:offset]
    alternatives = dict(token.top)
    alternatives.setdefault(generated, token.logprob)
    weighted = total = 0.0
    for text, logprob in alternatives.items():
        value = _DIGIT_VALUES.get(text) if offset == 0 else None
        if value is None:  # the digit inside a longer token, or with more after it: read it there
            digit = text[offset : offset + 1]
            if digit not in _DIGITS or (offset and not text.startswith(before)):
                continue
            after = text[offset + 1 : offset + 2]
            if after.isdigit() or after == ".":
                continue
            value = _DIGIT_VALUES[digit]
        weight = math.exp(logprob)
        weighted += value * weight
        total += weight
    if total <= 0 or not math.isfinite(total):
        return None
    return weighted / total


def _met_probability(token: TokenLogprobs, offset: int) -> float | None:
    """p(true) over the alternatives that read as the generated token up to `offset` and then "t" or "f"
    (the engine's constrained decoding leaves no other value there)."""
    before = token.token[:offset]
    alternatives = dict(token.top)
    alternatives.setdefault(token.token, token.logprob)
    met = total = 0.0
    for text, logprob in alternatives.items():
        letter = text[offset : offset + 1]
        if letter in _MET and text.startswith(before):
            weight = math.exp(logprob)
            total += weight
            if letter == "t":
                met += weight
    if total <= 0 or not math.isfinite(total):
        return None
    return met / total
