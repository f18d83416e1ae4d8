"""How much the judge's marks depend on where an answer is shown, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.position_bias [--groups 8] [--answers 4]

Every group is judged through the service's own JudgeService.grade (in-process) with `orders=4`: the
seeded shuffle p, p reversed, p rotated by half, and that reversed, so with four answers each answer is
shown once in every position. parse_retries is 0, so the stored raw outputs are exactly one per order,
in order, and each is parsed back to per-order marks. A judge that ignores position gives every answer
the same score in every order. Reported:
- order sensitivity: the service's own figure (mean over answers of max - min of the overall score
  across orders), averaged over groups; 0 = order changes nothing, 1 = from worst to best;
- the mean overall score by shown position (1 = first), pooled over all orders and groups;
- Spearman's rho between shown position and score, pooled (0: no position effect);
- how often two orders rank the group's answers the same way: mean Kendall tau-b between the score
  vectors of every pair of orders (1: identical rankings, 0: unrelated); pairs where an order gave
  every answer the same score are left out (tau is undefined there), and their count is reported;
- the share of answers whose overall score differs between orders.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
from statistics import mean
from typing import Any

from benchmarks.common import (
    SharedBackend,
    bench_settings,
    log,
    make_groups,
    markdown_table,
    running_app,
    start_engine,
    workdir,
    write_result,
)
from judge_service.judging.llm.criteria import resolve_criteria
from judge_service.judging.llm.parser import parse_judgement
from judge_service.quality.agreement import kendall_tau_b, spearman_rho
from judge_service.schemas import JudgeRequest, StoredJudgement

NAME = "position_bias"


def per_order_scores(stored: StoredJudgement) -> list[dict[str, tuple[int, float]]]:
    """For each order: answer id -> (shown position, overall 0-1 score), for the answers it marked."""
    criteria = resolve_criteria(stored.request.criteria)
    names = [c.name for c in criteria]
    weights = {c.name: c.weight for c in criteria}
    total = sum(weights.values())
    ids = [a.id for a in stored.request.answers]
    orders = stored.answer_orders or []
    result = []
    for order, raw in zip(orders, stored.raw_outputs, strict=True):
        parsed = parse_judgement(raw, ids, names)
        result.append(
            {
                answer_id: (
                    order.index(answer_id),
                    sum((marks[n].mark - 1) / 4 * weights[n] for n in names) / total,
                )
                for answer_id, marks in parsed.marks.items()
            }
        )
    return result


def summarize(judgements: list[StoredJudgement], n_answers: int) -> dict[str, Any]:
    by_position: dict[int, list[float]] = {p: [] for p in range(n_answers)}
    positions: list[float] = []
    scores: list[float] = []
    taus: list[float] = []
    answers_seen = answers_changed = 0
    for stored in judgements:
        orders = per_order_scores(stored)
        for marked in orders:
            for position, score in marked.values():
                by_position[position].append(score)
                positions.append(position)
                scores.append(score)
        for first, second in itertools.combinations(orders, 2):
            common = [a for a in first if a in second]
            tau = kendall_tau_b([first[a][1] for a in common], [second[a][1] for a in common])
            if tau is not None:
                taus.append(tau)
        for answer in stored.request.answers:
            seen = {round(o[answer.id][1], 6) for o in orders if answer.id in o}
            if seen:
                answers_seen += 1
                answers_changed += len(seen) > 1
    sensitivities = [j.order_sensitivity for j in judgements if j.order_sensitivity is not None]
    return {
        "groups": len(judgements),
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
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


async def _main(args: argparse.Namespace) -> int:
    bodies = make_groups(args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME)
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            reason_max_chars=args.reason_chars,
            parse_retries=0,
            max_groups_in_flight=max(32, args.groups),
        )
        engine = await start_engine(settings)
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                log(f"judging {args.groups} groups of {args.answers} answers under 4 orders each ...")
                requests = [JudgeRequest.model_validate(b | {"orders": 4}) for b in bodies]
                responses = await asyncio.gather(*(service.grade(r) for r in requests))
                judgements = [await service.get(r.judgement_id) for r in responses]
        finally:
            await engine.close()
    summary = summarize(judgements, args.answers)
    summary["model"] = judgements[0].judge_model if judgements else None
    summary["marks_expected_per_position"] = args.groups * 4
    summary["unscored_reasons"] = sorted(
        {a.error or "" for j in judgements for a in j.answers if a.status == "unscored"}
    )[:10]
    summary["raw_output_sample"] = judgements[0].raw_outputs[0][:1500] if judgements else None
    result = {"config": vars(args), "summary": summary}
    positions = summary["mean_score_by_position"]
    headers = [
        "judge",
        "groups",
        "order sensitivity",
        *(f"mean score at position {p}" for p in positions),
        "Spearman position vs score",
        "Kendall tau between orders",
        "answers whose score changed",
    ]
    table = markdown_table(
        headers,
        [
            [
                summary["model"],
                summary["groups"],
                summary["order_sensitivity_mean"],
                *positions.values(),
                summary["spearman_position_vs_score"],
                summary["kendall_tau_between_orders_mean"],
                summary["answers_whose_score_changed_share"],
            ]
        ],
    )
    write_result(NAME, result, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=8, help="groups, all submitted at once")
    parser.add_argument("--answers", type=int, default=4, help="N; 4 shows each answer in every position")
    parser.add_argument("--criteria", type=int, default=2, help="first n default criteria (4 = all)")
    parser.add_argument("--reason-chars", type=int, default=32)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
