"""Canary answers: a planted answer no judge should prefer, judged inside live groups to catch a judge
that a policy could game, while the run goes on.

A chosen group (JUDGE_CANARY_RATE of them, or the request's `canaries`) gets one extra answer built from
the group itself (canary_kinds.py), with an id of the same form as the caller's ids. The graders judge it
with the others (judging/plan.py: a judge that compares answers sees it in its prompt, shuffled into the
order; every other grader scores it on its own), and the service keeps it out of the response: the caller
gets exactly its answers back, and the canary is stored apart (`canaries` of the stored judgement).

The choice is seeded by the judgement id, so a judgement's canary can be told again from its id, and a
regrade reuses the stored canary instead of drawing one.

A canary "outranks" its group when it scores above the median of the group's scored answers.
"""

from __future__ import annotations

import random
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from judge_service.schemas import (
    ANSWER_ID_PATTERN,
    CANARY_KINDS,
    Answer,
    AnswerResult,
    CanaryKind,
    CanaryResult,
    JudgeRequest,
    StoredJudgement,
)
from judge_service.watch.canary_kinds import build

_ID = re.compile(ANSWER_ID_PATTERN)
_NUMBERED = re.compile(r"(.*?)(\d+)")


@dataclass(frozen=True)
class Canary:
    kind: CanaryKind
    answer: Answer

    @classmethod
    def of(cls, stored: StoredJudgement) -> Canary | None:
        """The canary a stored judgement was judged with (a regrade judges it again), if any."""
        if not stored.canaries:
            return None
        first = stored.canaries[0]
        return cls(first.kind, Answer.model_construct(id=first.id, text=first.text))


@dataclass(frozen=True)
class CanaryPolicy:
    """Which groups get a canary, and of which kinds (module docstring)."""

    rate: float = 0.0  # JUDGE_CANARY_RATE: the share of groups that get one when the request names none
    kinds: tuple[CanaryKind, ...] = CANARY_KINDS  # JUDGE_CANARY_KINDS: what `rate` and "on" draw from

    def choose(self, request: JudgeRequest, judgement_id: str) -> Canary | None:
        """The group's canary, or None: not chosen, or none of the allowed kinds applies to it (a reference
        with no figure or yes/no has no reference_twist: another allowed kind is drawn instead)."""
        asked = request.canaries
        if asked == "off" or (asked is None and self.rate <= 0):
            return None
        rng = random.Random(judgement_id)
        if asked is None and rng.random() >= self.rate:
            return None
        kinds = list(self.kinds if asked is None or asked == "on" else dict.fromkeys(asked))
        rng.shuffle(kinds)
        for kind in kinds:
            text = build(kind, request.conversation, request.reference, rng)
            if text is not None:
                answer_id = canary_id([a.id for a in request.answers], rng)
                # Built, not validated: an `empty` canary is what no caller's answer may be.
                return Canary(kind, Answer.model_construct(id=answer_id, text=text))
        return None


def canary_id(ids: Sequence[str], rng: random.Random) -> str:
    """An id of the same form as the caller's, unused among them: the next number where the ids are a
    prefix and a number ("a1".."a4" -> "a5", "07" -> "08"), else one of the ids with each letter and digit
    redrawn in its class ("3f9c" -> "b21e")."""
    taken = set(ids)
    numbered = [_NUMBERED.fullmatch(i) for i in ids]
    if ids and all(numbered) and len({m.group(1) for m in numbered if m}) == 1:
        prefix = numbered[0].group(1) if numbered[0] else ""
        digits = [m.group(2) for m in numbered if m]
        width = min(len(d) for d in digits) if any(d.startswith("0") for d in digits) else 1
        candidate = f"{prefix}{max(int(d) for d in digits) + 1:0{width}d}"
        if candidate not in taken and _ID.fullmatch(candidate):
            return candidate
    for _ in range(100):
        candidate = "".join(_redrawn(char, rng) for char in rng.choice(list(ids) or ["c0"]))
        if candidate not in taken and _ID.fullmatch(candidate):
            return candidate
    while True:  # ids so dense no redraw was free (all 36 one-character ids, say)
        candidate = f"c{rng.getrandbits(32):08x}"
        if candidate not in taken:
            return candidate


def result(
    canary: Canary,
    graded: AnswerResult,
    answers: Sequence[AnswerResult],
    orders: Sequence[Sequence[str]] | None = None,
) -> CanaryResult:
    """The stored canary: its grade, whether it outranks the group's median scored answer, and its place
    in each of the judge's answer `orders`."""
    scores = [a.score for a in answers if a.score is not None]
    outranked = None
    if graded.score is not None and scores:
        outranked = graded.score > statistics.median(scores)
    shown_at = None
    if orders:
        shown_at = [list(order).index(canary.answer.id) for order in orders if canary.answer.id in order]
    return CanaryResult.model_validate(
        {
            **graded.model_dump(),
            "kind": canary.kind,
            "text": canary.answer.text,
            "outranked": outranked,
            "shown_at": shown_at or None,
        }
    )


def without_canary(orders: list[list[str]] | None, canary: Canary | None) -> list[list[str]] | None:
    """The judge's answer orders as the caller may see them: the caller's ids only."""
    if orders is None or canary is None:
        return orders
    return [[answer_id for answer_id in order if answer_id != canary.answer.id] for order in orders]


def _redrawn(char: str, rng: random.Random) -> str:
    if char.isdigit():
        return rng.choice("0123456789")
    if char.islower():
        return rng.choice("abcdefghijklmnopqrstuvwxyz")
    if char.isupper():
        return rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return char
