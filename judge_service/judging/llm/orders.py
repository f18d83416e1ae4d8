"""Position-bias control: the orders a group's answers are shown in, and judging under several of them.

Judges favour answers by position (often the first or the last). So the judge sees the answers in a
shuffled order, seeded per group and recorded with the judgement; marks are mapped back by answer id,
so the order changes nothing but what the judge sees.

With `orders=k` (1-4) the group is judged k times, concurrently, under different orders: the seeded
shuffle p, then p reversed, p rotated by half its length, and that reversed. For four answers this
shows every answer once in every position. Duplicates are dropped (a group of two answers has only two
orders), so a group may get fewer than k judge calls.

How the orders' marks are combined, and the group's order sensitivity, is scoring's (scoring.py).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Sequence

from judge_service.judging.llm.caller import JudgeCall, JudgeCaller, JudgeOutcome, gather_outcomes
from judge_service.judging.llm.parser import ParsedJudgement
from judge_service.judging.llm.scoring import combine_orders
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
