"""Who meets whom (judging/comparison/schedule.py): every pair under the cap, a regular seeded schedule
above it, one order or both, and the knockout bracket with byes."""

from __future__ import annotations

from collections import Counter

import pytest

from judge_service.judging.comparison.schedule import (
    bracket_order,
    first_round,
    opponents_per_answer,
    pair_schedule,
    rounds_for,
)

IDS = [f"a{i}" for i in range(8)]


def unordered(pairs: list[tuple[str, str]]) -> set[frozenset[str]]:
    return {frozenset(p) for p in pairs}


def test_every_pair_in_both_orders_while_under_the_cap() -> None:
    pairs = pair_schedule(IDS, max_pairs=28, both_orders=True, seed=1)
    assert len(pairs) == 56 and len(set(pairs)) == 56  # each of the 28 pairs, each way
    assert len(unordered(pairs)) == 28


@pytest.mark.parametrize(("n", "max_pairs"), [(8, 12), (8, 10), (7, 10), (16, 32), (9, 20), (5, 5), (6, 3)])
def test_above_the_cap_every_answer_meets_the_same_number_of_opponents(n: int, max_pairs: int) -> None:
    ids = [f"a{i}" for i in range(n)]
    pairs = pair_schedule(ids, max_pairs=max_pairs, both_orders=False, seed=3)
    k = opponents_per_answer(n, max_pairs)
    assert 0 < len(pairs) <= max_pairs and len(unordered(pairs)) == len(pairs)  # no pair twice
    met = Counter(a for pair in pairs for a in pair)
    assert set(met.values()) == {k} and set(met) == set(ids)


def test_a_cap_too_small_for_a_regular_schedule_is_refused() -> None:
    with pytest.raises(ValueError, match="takes at least 5 pairs"):
        pair_schedule([f"a{i}" for i in range(5)], max_pairs=4, both_orders=True, seed=1)


def test_the_schedule_follows_the_seed() -> None:
    one = pair_schedule(IDS, max_pairs=12, both_orders=False, seed=5)
    assert pair_schedule(IDS, max_pairs=12, both_orders=False, seed=5) == one
    assert pair_schedule(IDS, max_pairs=12, both_orders=False, seed=6) != one


@pytest.mark.parametrize(("n", "max_pairs"), [(8, 28), (7, 21), (8, 12), (9, 20)])
def test_in_one_order_each_answer_is_shown_first_in_half_its_comparisons(n: int, max_pairs: int) -> None:
    ids = [f"a{i}" for i in range(n)]
    pairs = pair_schedule(ids, max_pairs=max_pairs, both_orders=False, seed=11)
    first = Counter(a for a, _ in pairs)
    shown_first = [first[i] for i in ids]
    assert max(shown_first) - min(shown_first) <= 1


@pytest.mark.parametrize(
    ("n", "byes", "matches", "rounds"),
    [(2, 0, 1, 1), (4, 0, 2, 2), (5, 3, 1, 3), (6, 2, 2, 3), (8, 0, 4, 3), (1, 1, 0, 0)],
)
def test_the_bracket_gives_byes_so_later_rounds_are_full(
    n: int, byes: int, matches: int, rounds: int
) -> None:
    order = bracket_order([f"a{i}" for i in range(n)], seed=2)
    bye_ids, pairs = first_round(order)
    assert (len(bye_ids), len(pairs), rounds_for(n)) == (byes, matches, rounds)
    if n > 1:  # after round one, a power of two go on: every later round is full
        assert len(bye_ids) + len(pairs) == 1 << (rounds - 1)
    assert sorted([*bye_ids, *(a for p in pairs for a in p)]) == sorted(order)
    assert bracket_order([f"a{i}" for i in range(n)], seed=2) == order
