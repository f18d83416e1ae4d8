"""Who meets whom: the pairwise grader's pairs and the knockout grader's bracket, both seeded.

Pairs: every pair of answers while N(N-1)/2 is within `max_pairs`; above it a schedule in which every
answer meets the same number k of opponents (a circulant graph over the answers in a seeded order: each
meets its k/2 neighbours on either side, and for odd k, with N even, the answer opposite), so no answer's
score rests on fewer comparisons than another's; a cap too small for even that is refused. Each pair is
shown in both orders, or in one: then each answer is shown first in half of its comparisons (within one).

Bracket: single elimination over the answers in a seeded order. Where N is not a power of two, the first
2^R - N answers of that order get a bye in round one (they advance without a comparison), so every later
round is full; N-1 comparisons in all, R = ceil(log2 N) rounds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

Pair = tuple[str, str]  # (shown first, shown second)


def opponents_per_answer(n: int, max_pairs: int) -> int:
    """How many opponents each of n answers meets: all others while the pairs fit in max_pairs, else the
    most that keeps every answer equal (n*k even, n*k/2 <= max_pairs)."""
    if n < 2:
        return 0
    k = min(n - 1, (2 * max_pairs) // n)
    if (n * k) % 2:
        k -= 1
    return max(k, 0)


def fewest_pairs(n: int) -> int:
    """The fewest pairs in which each of n answers meets the same number (at least one) of others."""
    return 0 if n < 2 else n // 2 if n % 2 == 0 else n


def pair_schedule(ids: Sequence[str], *, max_pairs: int, both_orders: bool, seed: int) -> list[Pair]:
    """The comparisons to make (module docstring), each as (first shown, second shown). ValueError when
    max_pairs is below fewest_pairs."""
    n = len(ids)
    if n >= 2 and max_pairs < fewest_pairs(n):
        raise ValueError(
            f"max_pairs {max_pairs} is too few for {n} answers: every answer must meet the same number of "
            f"others, which takes at least {fewest_pairs(n)} pairs"
        )
    k = opponents_per_answer(n, max_pairs)
    order = list(ids)
    random.Random(seed).shuffle(order)
    # Each pair of places (i, i + step) around the circle of the seeded order, the one at i shown first:
    # every answer is shown first in half its comparisons (within one).
    steps = range(1, n // 2 + 1) if k == n - 1 else range(1, k // 2 + 1)
    chosen: dict[frozenset[int], tuple[int, int]] = {}
    for i in range(n):
        for step in steps:
            chosen.setdefault(frozenset((i, (i + step) % n)), (i, (i + step) % n))
        if k % 2 and k != n - 1:
            chosen.setdefault(frozenset((i, (i + n // 2) % n)), (i, (i + n // 2) % n))
    pairs = [(order[i], order[j]) for i, j in chosen.values()]
    if both_orders:
        return [shown for a, b in pairs for shown in ((a, b), (b, a))]
    return pairs


def bracket_order(ids: Sequence[str], *, seed: int) -> list[str]:
    """The answers in their seeded bracket order (module docstring)."""
    order = list(ids)
    random.Random(seed).shuffle(order)
    return order


def rounds_for(n: int) -> int:
    return max((n - 1).bit_length(), 0)


def first_round(order: Sequence[str]) -> tuple[list[str], list[Pair]]:
    """Round one: the answers with a bye, and the matches of the rest (first-listed shown first). A lone
    answer has nothing to meet: it is listed as a bye."""
    n = len(order)
    if n < 2:
        return list(order), []
    byes = (1 << rounds_for(n)) - n
    rest = order[byes:]
    return list(order[:byes]), [(rest[i], rest[i + 1]) for i in range(0, len(rest) - 1, 2)]
