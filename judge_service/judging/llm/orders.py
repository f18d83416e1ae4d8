"""Position-bias control: the orders a group's answers are shown in, and judging under several of them.

Judges favour answers by position (often the first or the last). So the judge sees the answers in a
shuffled order, seeded per group and recorded with the judgement; marks are mapped back by answer id,
so the order changes nothing but what the judge sees.

With `orders=k` (1-4) the group is judged k times, concurrently, under different orders: the seeded
shuffle p, then p reversed, p rotated by half its length, and that reversed. For four answers this
shows every answer once in every position. Duplicates are dropped (a group of two answers has only two
orders), so a group may get fewer than k judge calls.

Combining orders, per answer and criterion, over the orders in which the judge marked the answer:
`score` is the exact mean of the scaled marks ((mark - 1) / 4; a checklist item's 1 or 0), `mark` the
mean mark rounded half up (a checklist item: met in at least half the orders)
(so `mark` and `score` may disagree slightly), `expected` the mean expected mark (when every such
order has one), and `reason` comes from the first such order. An
answer is unscored only when no order marked it. The group's order sensitivity is the mean, over
answers marked in two or more orders, of the spread (max - min) of the answer's overall score across
orders: 0 means the order changed nothing.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from collections.abc import Sequence

from judge_service.judging.llm.caller import JudgeCall, JudgeCaller, JudgeOutcome, gather_outcomes
from judge_service.judging.llm.criteria import answer_score, scaled, scaled_value
from judge_service.judging.llm.parser import Mark, ParsedJudgement
from judge_service.schemas import MAX_ORDERS, Criterion


def order_seed(judgement_id: str) -> int:
    """A 32-bit seed from the judgement id (32 bits: exact in every JSON client)."""
    return int.from_bytes(hashlib.sha256(judgement_id.encode()).digest()[:4], "big")


def shown_orders(answer_ids: Sequence[str], *, seed: int, count: int, shuffle: bool) -> list[list[str]]:
    """Up to `count` distinct orders of the ids, the first one the seeded shuffle (or as sent)."""
    base = list(answer_ids)
    if shuffle:
        random.Random(seed).shuffle(base)
    half = len(base) // 2
    rotated = base[half:] + base[:half]
    orders: list[list[str]] = []
    for candidate in (base, base[::-1], rotated, rotated[::-1])[: max(1, min(count, MAX_ORDERS))]:
        if candidate not in orders:
            orders.append(candidate)
    return orders


async def judge_in_orders(
    judge: JudgeCaller, orders: Sequence[list[JudgeCall]], answer_ids: list[str], criteria: list[Criterion]
) -> JudgeOutcome:
    """Judge each prepared order concurrently and combine (module docstring); one order: as it is.

    Any order's error fails the group, as a single call's would: its marks would be one-sided.
    """
    names = [c.name for c in criteria]
    if len(orders) == 1:
        return await judge.judge_order(orders[0], names)
    started = time.perf_counter()
    outcomes = await gather_outcomes(judge.judge_order(calls, names) for calls in orders)
    combined = JudgeOutcome(
        parsed=ParsedJudgement(),
        prompt_version=outcomes[0].prompt_version,
        order_parses=[o.parsed for o in outcomes],
    )
    combined.parsed, combined.mean_scores = combine_orders(combined.order_parses, answer_ids, criteria)
    for outcome in outcomes:
        combined.add_costs(outcome)
    combined.judge_ms = (time.perf_counter() - started) * 1000  # wall clock: the orders ran together
    return combined


def combine_orders(
    parses: Sequence[ParsedJudgement], answer_ids: Sequence[str], criteria: Sequence[Criterion]
) -> tuple[ParsedJudgement, dict[str, dict[str, float]]]:
    """(marks with rounded mean marks and the first reason, answer -> criterion -> mean score)."""
    combined = ParsedJudgement()
    means: dict[str, dict[str, float]] = {}
    for parsed in parses:
        combined.notes.extend(n for n in parsed.notes if n not in combined.notes)
        combined.problems |= getattr(parsed, "problems", set())
    for answer_id in answer_ids:
        marked = [p.marks[answer_id] for p in parses if answer_id in p.marks]
        if not marked:
            first = next((p.failures[answer_id] for p in parses if answer_id in p.failures), "no marks")
            combined.failures[answer_id] = f"unscored in all {len(parses)} orders; first: {first}"
            continue
        means[answer_id] = {}
        combined.marks[answer_id] = {}
        for criterion in criteria:
            name = criterion.name
            mean_mark = sum(m[name].mark for m in marked) / len(marked)
            means[answer_id][name] = scaled(criterion, mean_mark)
            rounded = math.floor(mean_mark + 0.5)  # half up: 2.5 -> 3, unlike round()
            expected = [m[name].expected for m in marked]
            mean_expected = None if None in expected else round(sum(expected) / len(expected), 6)  # type: ignore[arg-type]
            combined.marks[answer_id][name] = Mark(rounded, marked[0][name].reason, mean_expected)
    return combined, means


def criterion_score(mark: Mark, binary: bool, mean: float | None, *, expected: bool = False) -> float:
    """The 0-1 score of one criterion's mark (a checklist item's when `binary`): with `expected`, the
    scaled expected mark (a checklist item: the probability of met) where the mark has one; else the mean
    over orders when combined (`mean`, combine_orders' score), else the scaled mark."""
    if expected and mark.expected is not None:
        return scaled_value(binary, mark.expected)
    if mean is not None:
        return mean
    return scaled_value(binary, mark.mark)


def order_sensitivity(
    parses: Sequence[ParsedJudgement], criteria: Sequence[Criterion], answer_ids: Sequence[str]
) -> float | None:
    """Mean over `answer_ids` marked in 2+ orders of max - min of their overall score (a canary's spread
    is not the caller's figure); None below 2 orders."""
    if len(parses) < 2:
        return None
    spreads = []
    for answer_id in answer_ids:
        overall = [
            answer_score({c.name: scaled(c, p.marks[answer_id][c.name].mark) for c in criteria}, criteria)
            for p in parses
            if answer_id in p.marks
        ]
        if len(overall) >= 2:
            spreads.append(max(overall) - min(overall))
    return sum(spreads) / len(spreads) if spreads else None
