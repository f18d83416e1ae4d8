"""How much the judge's marks depend on where an answer is shown (real engine); integer vs expected marks.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks position_bias [--groups 8] [--answers 4] [--decoding D]

Every group is judged through the service's own JudgeService.grade (in-process) in four orders: the
seeded shuffle p, p reversed, p rotated by half, and that reversed (orders.py), so with four answers each
answer is shown once in every position. Each order is its own judgement (answer shuffling off, the
answers sent in that order), so every order's marks and expected marks are stored. The same judgements
are then scored twice, from the integer marks and from the expected marks (the judge's
probability-weighted marks), and reported side by side:
- order sensitivity: mean over answers of max - min of the overall score across orders (the service's
  own figure for orders > 1), averaged over groups; 0 = order changes nothing, 1 = from worst to best;
- the mean overall score by shown position (1 = first), pooled over all orders and groups;
- Spearman's rho between shown position and score, pooled (0: no position effect);
- how often two orders rank the group's answers the same way: mean Kendall tau-b between the score
  vectors of every pair of orders (1: identical rankings, 0: unrelated); pairs where an order gave
  every answer the same score are left out (tau is undefined there), and their count is reported;
- the share of answers whose overall score differs between orders;
- ties: the share of flat judgements (every answer the same score: no GRPO signal) and the mean number
  of distinct scores per judgement.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from statistics import mean
from typing import Any

from benchmarks.engine import judge_on_engine
from benchmarks.experiment import Column, Experiment, Run, col, option, shared
from benchmarks.groups import make_groups
from benchmarks.report import log
from judge_service.judging.llm.criteria import resolve_criteria
from judge_service.judging.llm.orders import shown_orders
from judge_service.quality.agreement import kendall_tau_b, spearman_rho
from judge_service.schemas import MAX_ORDERS, JudgeRequest, ScoreFrom, StoredJudgement

NAME = "position_bias"


def order_requests(body: dict[str, Any], seed: int) -> list[JudgeRequest]:
    """The group once per structured order, its answers sent in that order (shuffling must be off)."""
    by_id = {a["id"]: a for a in body["answers"]}
    orders = shown_orders(list(by_id), seed=seed, count=MAX_ORDERS, shuffle=True)
    return [
        JudgeRequest.model_validate(body | {"answers": [by_id[i] for i in order], "orders": 1})
        for order in orders
    ]


def scores_of(stored: StoredJudgement, score_from: ScoreFrom) -> dict[str, tuple[int, float]]:
    """Answer id -> (shown position, overall 0-1 score from marks or expected marks), scored answers.
    An expected mark the judge did not give is replaced by the integer mark (counted by stand_ins)."""
    criteria = resolve_criteria(stored.request.criteria)
    total = sum(c.effective_weight for c in criteria)
    shown = (stored.answer_orders or [[a.id for a in stored.request.answers]])[0]
    result = {}
    for answer in stored.answers:
        if answer.status != "scored" or answer.criteria is None:
            continue
        values: dict[str, float] = {}
        for c in criteria:
            mark = answer.criteria[c.name]
            expected = mark.expected_mark if score_from == "expected" else None
            values[c.name] = expected if expected is not None else mark.mark
        overall = sum((values[c.name] - 1) / 4 * c.effective_weight for c in criteria) / total
        result[answer.id] = (shown.index(answer.id), overall)
    return result


def stand_ins(groups: list[list[StoredJudgement]]) -> int:
    """Criterion marks without an expected mark, over all judgements."""
    return sum(
        1
        for judgements in groups
        for stored in judgements
        for answer in stored.answers
        for mark in (answer.criteria or {}).values()
        if mark.expected_mark is None
    )


def summarize(
    groups: list[list[StoredJudgement]], n_answers: int, score_from: ScoreFrom = "mark"
) -> dict[str, Any]:
    """The figures of the module docstring over groups, each a list of one judgement per order."""
    by_position: dict[int, list[float]] = {p: [] for p in range(n_answers)}
    positions: list[float] = []
    scores: list[float] = []
    taus: list[float] = []
    sensitivities: list[float] = []
    flat = distinct_total = judged = 0
    answers_seen = answers_changed = 0
    for judgements in groups:
        orders = [scores_of(stored, score_from) for stored in judgements]
        for marked in orders:
            for position, score in marked.values():
                by_position[position].append(score)
                positions.append(position)
                scores.append(score)
            if len(marked) >= 2:
                distinct = len({round(score, 6) for _, score in marked.values()})
                judged += 1
                distinct_total += distinct
                flat += distinct == 1
        for first, second in itertools.combinations(orders, 2):
            common = [a for a in first if a in second]
            tau = kendall_tau_b([first[a][1] for a in common], [second[a][1] for a in common])
            if tau is not None:
                taus.append(tau)
        spreads = []
        for answer in judgements[0].request.answers:
            seen = [o[answer.id][1] for o in orders if answer.id in o]
            if seen:
                answers_seen += 1
                answers_changed += len({round(s, 6) for s in seen}) > 1
            if len(seen) >= 2:
                spreads.append(max(seen) - min(seen))
        if spreads:
            sensitivities.append(mean(spreads))
    return {
        "score_from": score_from,
        "groups": len(groups),
        "order_sensitivity_mean": round(mean(sensitivities), 4) if sensitivities else None,
        "mean_score_by_position": {
            str(p + 1): round(mean(v), 4) if v else None for p, v in by_position.items()
        },
        "marks_by_position": {str(p + 1): len(v) for p, v in by_position.items()},
        "spearman_position_vs_score": _round(spearman_rho(positions, scores)),
        "kendall_tau_between_orders_mean": round(mean(taus), 4) if taus else None,
        "order_pairs_compared": len(taus),
        "answers_whose_score_changed_share": round(answers_changed / answers_seen, 4)
        if answers_seen
        else None,
        "flat_share": round(flat / judged, 4) if judged else None,
        "distinct_scores_per_group_mean": round(distinct_total / judged, 4) if judged else None,
    }


async def judge_in_four_orders(
    service: Any, bodies: list[dict[str, Any]], seed: int
) -> list[list[StoredJudgement]]:
    """Every group in the four orders, all submitted at once; per group its judgements in order."""
    requests = [order_requests(body, seed + i) for i, body in enumerate(bodies)]
    flat = [r for group in requests for r in group]
    responses = await asyncio.gather(*(service.grade(r) for r in flat))
    stored = [await service.get(r.judgement_id) for r in responses]
    per_group, start = [], 0
    for group in requests:
        per_group.append(stored[start : start + len(group)])
        start += len(group)
    return per_group


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[list[list[StoredJudgement]]]:
    """Every group judged in the four orders, on one engine; the context of the run goes to the result."""
    args = run.args
    bodies = make_groups(args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME)
    overrides: dict[str, Any] = {"decoding": args.decoding} if args.decoding else {}
    async with judge_on_engine(
        NAME,
        reason_max_chars=args.reason_chars,
        parse_retries=0,
        shuffle_answers=False,
        max_groups_in_flight=max(32, args.groups * MAX_ORDERS),
        **overrides,
    ) as judge:
        log(f"judging {args.groups} groups of {args.answers} answers in 4 orders each ...")
        groups = await judge_in_four_orders(judge.service, bodies, args.seed)
        decoding = judge.settings.resolved_decoding()
    judgements = [j for group in groups for j in group]
    run.result["context"] = {
        "model": judgements[0].judge_model if judgements else None,
        "decoding": decoding,
        "expected_marks_missing": stand_ins(groups),
        "criterion_marks": sum(len(a.criteria or {}) for j in judgements for a in j.answers),
        "unscored_reasons": sorted(
            {a.error or "" for j in judgements for a in j.answers if a.status == "unscored"}
        )[:10],
        "raw_output_sample": judgements[0].raw_outputs[0][:1500] if judgements else None,
    }
    yield groups


def columns(run: Run) -> list[Column]:
    context = run.result["context"]
    positions = range(1, run.args.answers + 1)
    return [
        Column("scored from", lambda cell: f"{cell.arm} ({context['decoding']}, {context['model']})"),
        col("groups", "groups"),
        col("order sensitivity", "order_sensitivity_mean"),
        *(col(f"mean score at position {p}", f"mean_score_by_position.{p}") for p in positions),
        col("Spearman position vs score", "spearman_position_vs_score"),
        col("Kendall tau between orders", "kendall_tau_between_orders_mean"),
        col("answers whose score changed", "answers_whose_score_changed_share"),
        col("flat judgements", "flat_share"),
        col("distinct scores per judgement", "distinct_scores_per_group_mean"),
    ]


EXPERIMENT = Experiment(
    options=[
        option("--groups", 8, "groups, all submitted at once"),
        option("--answers", 4, "N; 4 shows each answer in every position"),
        *shared(criteria=2, reason_chars=32, seed=31),
        option("--decoding", choices=["group", "per_answer"], help="default: the service's"),
    ],
    arms=("mark", "expected"),
    order="fixed",
    measure=lambda run, score_from, _: summarize(run.state, run.args.answers, score_from),  # type: ignore[arg-type]
    progress=lambda e: f"order sensitivity {e['order_sensitivity_mean']}",
    columns=columns,
    report=lambda run: run.result.update(summaries=run.entries["entries"]),
)

EXPERIMENT.run_if_main(__name__)
