"""Canary answers (watch/canaries.py; docs/watching.md): the kinds and the request's `canaries`."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field

# Canary answers (watch/canaries.py; docs/watching.md).
CanaryKind = Literal[
    "injection", "empty", "opener", "reference_twist", "restated", "verbose_wrong", "refusal"
]
CANARY_KINDS: tuple[CanaryKind, ...] = get_args(CanaryKind)
Canaries = (
    Literal["off", "on"] | Annotated[list[CanaryKind], Field(min_length=1, max_length=len(CANARY_KINDS))]
)


def parse_canary_kinds(value: str) -> tuple[CanaryKind, ...]:
    """Canary kinds separated by commas (JUDGE_CANARY_KINDS, `eval --canaries`), at least one; in the
    order of CANARY_KINDS."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in CANARY_KINDS]
    if unknown or not names:
        raise ValueError(
            f"expected canary kinds separated by commas, from {', '.join(CANARY_KINDS)}; got {value!r}"
        )
    return tuple(kind for kind in CANARY_KINDS if kind in names)


CANARIES_DESCRIPTION = (
    "Whether this group gets a canary: one extra answer built from the group to catch a judge that can "
    "be gamed, judged with the others and never returned. 'off', 'on' (a kind of JUDGE_CANARY_KINDS), or "
    "a list of kinds to draw from. Default: JUDGE_CANARY_RATE decides (0: never)."
)
