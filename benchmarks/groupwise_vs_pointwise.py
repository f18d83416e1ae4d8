"""Group-wise judging (one call sees all N answers) against point-wise (N calls, one answer each).

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.groupwise_vs_pointwise [--groups 8] [--pairs 2]

One engine, one process. Both modes go through the service's own JudgeService.grade (in-process, no
HTTP: that cost is benchmark service_overhead's), with the same template: point-wise sends each answer
as a one-answer group (same conversation, reference and criteria). Each round submits --groups groups
at once (group-wise: --groups engine requests; point-wise: N x --groups), so the engine batches all it
can; admission is opened to 64 in flight so it does not cap point-wise. Rounds alternate
group/point, point/group, ...; the prefix cache is emptied before each round (within a round it keeps
working as in production, which helps point-wise: its N prompts share system prompt, conversation and
reference). parse_retries is 0 so each judge call is exactly one engine call.

Reported per mode: prompt tokens per group (sum over its calls), completion tokens per group, groups/s,
scored answers, and the ratios group-wise / point-wise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups, split_pointwise
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import workdir
from judge_service.schemas import JudgeRequest, JudgeResponse

NAME = "groupwise_vs_pointwise"


async def mode_round(service: Any, groups: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """All groups at once; a group's latency is until its last call returns."""

    async def grade_group(body: dict[str, Any]) -> list[JudgeResponse]:
        bodies = [body] if mode == "groupwise" else split_pointwise(body)
        requests = [JudgeRequest.model_validate(b) for b in bodies]
        return list(await asyncio.gather(*(service.grade(r) for r in requests)))

    load = await run_load(groups, grade_group, concurrency=len(groups))
    responses = [r for group in load.results for r in group]
    answers = [a for r in responses for a in r.answers]
    return {
        "mode": mode,
        "groups": load.ok,
        "errors": load.errors[:3],
        "judge_calls": sum(r.usage.judge_calls for r in responses),
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in responses),
        "completion_tokens": sum(r.usage.completion_tokens for r in responses),
        "answers": len(answers),
        "scored_answers": sum(1 for a in answers if a.status == "scored"),
        "latencies_s": [round(x, 4) for x in load.latencies_s],
    }


async def _main(args: argparse.Namespace) -> int:
    groups = make_groups(
        args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME, fixed_order=True
    )
    rounds: list[dict[str, Any]] = []
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            reason_max_chars=args.reason_chars,
            parse_retries=0,
            max_groups_in_flight=max(64, args.groups * args.answers),
        )
        engine = await start_engine(settings)
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                log("warm-up: one group each way (not measured)")
                await mode_round(service, groups[:1], "groupwise")
                await mode_round(service, groups[:1], "pointwise")
                for pair in range(args.pairs):
                    order = ["groupwise", "pointwise"] if pair % 2 == 0 else ["pointwise", "groupwise"]
                    for mode in order:
                        await reset_prefix_cache(engine)
                        entry = {"pair": pair, **await mode_round(service, groups, mode)}
                        rounds.append(entry)
                        log(
                            f"pair {pair} {mode}: {entry['groups_per_s']} groups/s, prompt tokens "
                            f"{entry['prompt_tokens']}, completion tokens {entry['completion_tokens']}, "
                            f"scored {entry['scored_answers']}/{entry['answers']}"
                        )
        except Exception as exc:
            if len(rounds) < 2 * args.pairs:
                raise
            log(f"teardown failed after the measurement (results kept): {type(exc).__name__}: {exc}")
        finally:
            await engine.close()
    return _report(args, rounds)


def _report(args: argparse.Namespace, rounds: list[dict[str, Any]]) -> int:
    modes: dict[str, dict[str, Any]] = {}
    for mode in ("groupwise", "pointwise"):
        mine = [r for r in rounds if r["mode"] == mode]
        groups = sum(r["groups"] for r in mine)
        wall = sum(r["wall_s"] for r in mine)
        modes[mode] = {
            "groups": groups,
            "judge_calls_per_group": round(sum(r["judge_calls"] for r in mine) / groups, 2),
            "prompt_tokens_per_group": round(sum(r["prompt_tokens"] for r in mine) / groups, 1),
            "completion_tokens_per_group": round(sum(r["completion_tokens"] for r in mine) / groups, 1),
            "groups_per_s": round(groups / wall, 4),
            "scored_share": round(
                sum(r["scored_answers"] for r in mine) / max(1, sum(r["answers"] for r in mine)), 3
            ),
            "group_latency": latency_summary([x for r in mine for x in r["latencies_s"]]),
        }
    g, p = modes["groupwise"], modes["pointwise"]
    ratios = {
        "groups_per_s_group_over_point": ratio(g["groups_per_s"], p["groups_per_s"]),
        "prompt_tokens_group_over_point": ratio(g["prompt_tokens_per_group"], p["prompt_tokens_per_group"]),
        "completion_tokens_group_over_point": ratio(
            g["completion_tokens_per_group"], p["completion_tokens_per_group"]
        ),
    }
    pair_ratios = []
    for pair in range(args.pairs):
        by = {r["mode"]: r for r in rounds if r["pair"] == pair}
        pair_ratios.append(ratio(by["groupwise"]["groups_per_s"], by["pointwise"]["groups_per_s"]))
    result = {
        "config": {**vars(args), "parse_retries": 0},
        "modes": modes,
        "ratios": ratios,
        "pair_ratios_groups_per_s": pair_ratios,
        "rounds": rounds,
    }
    rows = [
        [
            mode,
            m["judge_calls_per_group"],
            m["prompt_tokens_per_group"],
            m["completion_tokens_per_group"],
            m["groups_per_s"],
            m["group_latency"]["p50_ms"],
            m["scored_share"],
        ]
        for mode, m in modes.items()
    ]
    table = markdown_table(
        [
            "mode",
            "judge calls/group",
            "prompt tokens/group",
            "completion tokens/group",
            "groups/s",
            "group p50 ms",
            "scored share",
        ],
        rows,
    )
    table += (
        f"\n\ngroup-wise / point-wise: groups/s **{ratios['groups_per_s_group_over_point']}** (per pair "
        f"{', '.join(map(str, pair_ratios))}), prompt tokens {ratios['prompt_tokens_group_over_point']}, "
        f"completion tokens {ratios['completion_tokens_group_over_point']}. N={args.answers}, "
        f"{args.criteria} criterion(s), reasons <= {args.reason_chars} chars, {args.groups} groups at once."
    )
    write_result(NAME, result, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=8, help="groups per round, all submitted at once")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--answers", type=int, default=8, help="N, answers per group")
    parser.add_argument("--criteria", type=int, default=1, help="first n default criteria (4 = all)")
    parser.add_argument("--reason-chars", type=int, default=16)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
