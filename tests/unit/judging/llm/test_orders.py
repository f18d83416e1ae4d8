"""Answer orders: seeded shuffles, balanced positions, combining orders and their spread."""

from __future__ import annotations

import pytest

from judge_service.judging.llm.orders import order_seed, shown_orders
from judge_service.judging.llm.parser import Mark, ParsedJudgement
from judge_service.judging.llm.scoring import combine_orders, order_sensitivity
from judge_service.schemas import Criterion

IDS = ["a", "b", "c", "d"]


def test_seed_is_a_stable_32_bit_number() -> None:
    # Pinned: stored judgements record orders derived from their id's seed; a change here would make
    # regrades and audits replay other orders (values as computed at this release).
    assert order_seed("f" * 32) == 891486792
    assert order_seed("x") == 762385986
    assert 0 <= order_seed("x") < 2**32
    assert order_seed("x") != order_seed("y")


def test_one_order_is_the_seeded_shuffle_or_as_sent() -> None:
    assert shown_orders(IDS, seed=7, count=1, shuffle=False) == [IDS]
    shuffled = shown_orders(IDS * 1, seed=7, count=1, shuffle=True)
    assert shuffled == shown_orders(IDS, seed=7, count=1, shuffle=True)
    assert sorted(shuffled[0]) == IDS
    many = [f"x{i}" for i in range(10)]
    assert shown_orders(many, seed=1, count=1, shuffle=True) != shown_orders(
        many, seed=2, count=1, shuffle=True
    )


def test_four_orders_put_each_of_four_answers_once_in_every_position() -> None:
    orders = shown_orders(IDS, seed=3, count=4, shuffle=True)
    assert len(orders) == 4
    for answer_id in IDS:
        assert sorted(order.index(answer_id) for order in orders) == [0, 1, 2, 3]


def test_small_groups_get_only_their_distinct_orders() -> None:
    assert shown_orders(["a", "b"], seed=0, count=4, shuffle=False) == [["a", "b"], ["b", "a"]]
    assert shown_orders(["a"], seed=0, count=4, shuffle=True) == [["a"]]
    assert len(shown_orders(["a", "b", "c"], seed=0, count=4, shuffle=True)) == 4


def _criterion(name: str, weight: float = 1.0, **fields: str) -> Criterion:
    if fields.get("scale") == "binary":
        return Criterion(name=name, description=name, weight=weight, **fields)  # type: ignore[arg-type]
    return Criterion(name=name, description=name, mark_1="bad", mark_5="good", weight=weight)


XY = [_criterion("x"), _criterion("y")]


def _parsed(marks: dict[str, dict[str, int]], failures: dict[str, str] | None = None) -> ParsedJudgement:
    return ParsedJudgement(
        marks={
            a: {c: Mark(mark=m, reason=f"{a}{c}{m}") for c, m in by_c.items()} for a, by_c in marks.items()
        },
        failures=failures or {},
    )


def test_combining_orders_averages_scores_rounds_marks_half_up_and_keeps_the_first_reason() -> None:
    first = _parsed({"a": {"x": 2, "y": 5}}, failures={"b": "no entry"})
    second = _parsed({"a": {"x": 3, "y": 5}, "b": {"x": 1, "y": 1}})
    third = _parsed({}, failures={"a": "bad", "b": "bad", "c": "bad"})
    combined, means = combine_orders([first, second, third], ["a", "b", "c"], XY)
    assert means["a"] == {"x": pytest.approx(0.375), "y": 1.0}  # marks 2 and 3: mean 2.5
    assert combined.marks["a"]["x"] == Mark(mark=3, reason="ax2")
    assert means["b"] == {"x": 0.0, "y": 0.0}  # marked in one order only
    assert combined.failures == {"c": "unscored in all 3 orders; first: bad"}


def test_order_sensitivity_is_the_mean_spread_of_overall_scores() -> None:
    weights = [_criterion("x", 3.0), _criterion("y", 1.0)]
    first = _parsed({"a": {"x": 5, "y": 5}, "b": {"x": 3, "y": 3}, "c": {"x": 1, "y": 1}})
    second = _parsed({"a": {"x": 1, "y": 5}, "b": {"x": 3, "y": 3}})
    # a: 1.0 vs (0 * 3 + 1 * 1) / 4 = 0.25 -> 0.75; b: 0; c: in one order only, left out.
    assert order_sensitivity([first, second], weights, ["a", "b", "c"]) == pytest.approx(0.375)
    assert order_sensitivity([first], weights, ["a", "b", "c"]) is None
    # Only the answers asked about: a canary's spread is not the caller's figure.
    assert order_sensitivity([first, second], weights, ["b"]) == 0.0


def test_checklist_items_average_met_over_orders_and_a_half_rounds_to_met() -> None:
    items = [_criterion("x", scale="binary"), _criterion("p", scale="binary", kind="pitfall")]
    first = _parsed({"a": {"x": 1, "p": 0}})
    second = _parsed({"a": {"x": 0, "p": 1}})
    combined, means = combine_orders([first, second], ["a"], items)
    assert means["a"] == {"x": 0.5, "p": 0.5}
    assert combined.marks["a"]["x"].mark == 1  # met in half the orders: met
    # Overall: x (weight 1) met, p (pitfall, weight 0.9) not: 1.0; then 0 - 0.9 clipped: 0.0.
    assert order_sensitivity([first, second], items, ["a"]) == pytest.approx(1.0)
