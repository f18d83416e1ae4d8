"""What canaries cost: JUDGE_CANARY_RATE 0 vs 0.1 vs 1.0, on the fake judge and on the embedded judge.

    .venv/bin/python -m benchmarks.canaries [--judges fake,embedded] [--rates 0,0.1,1] [--levels 1,8]

Each judge serves every rate from one service built per rate (on the embedded judge, over one shared
engine); every group goes through JudgeService.grade in this process, closed loop at each level of groups
in flight. At each level every rate judges the same groups, in an order that rotates per level (the
engine's prefix cache emptied before each). The fake judge measures the service's own cost (building the
canary, the extra answer in the prompt, storing it apart); the embedded judge what a real engine pays
for one more answer per chosen group (in its default per-answer decoding: one more judge call, sharing
the group's prefix). Reported: groups/s, latency p50/p99, judge calls, prompt and completion tokens per
group, the share of groups that got a canary, and each rate's p50 and groups/s over rate 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import workdir
from judge_service.backends.base import JudgeBackend
from judge_service.backends.fake import FakeBackend
from judge_service.schemas import JudgeRequest

NAME = "canaries"


async def measure(
    backend: JudgeBackend, settings: Any, groups: list[dict[str, Any]], concurrency: int
) -> dict[str, Any]:
    async with running_app(settings, backend) as app:
        service = app.state.service

        async def grade(body: dict[str, Any]) -> Any:
            return await service.grade(JudgeRequest.model_validate(body))

        load = await run_load(groups, grade, concurrency=concurrency)
        with_canary = 0
        for response in load.results:
            stored = await service.get(response.judgement_id)
            with_canary += bool(stored.canaries)
    responses = load.results
    n = max(1, load.ok)
    return {
        "groups": load.ok,
        "errors": load.errors[:3],
        "groups_per_s": round(load.per_second(), 4),
        "latency": latency_summary(load.latencies_s),
        "judge_calls_per_group": round(sum(r.usage.judge_calls for r in responses) / n, 2),
        "prompt_tokens_per_group": round(sum(r.usage.prompt_tokens for r in responses) / n, 1),
        "completion_tokens_per_group": round(sum(r.usage.completion_tokens for r in responses) / n, 1),
        "canary_share": round(with_canary / n, 4),
    }


async def run_judge(
    judge: str, args: argparse.Namespace, rates: list[float], levels: list[int]
) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    with workdir(f"{NAME}-{judge}") as tmp:
        base = {"backend": "fake"} if judge == "fake" else {}
        probe = bench_settings(tmp, **base)
        inner: JudgeBackend = FakeBackend(record=False) if judge == "fake" else await start_engine(probe)
        shared = SharedBackend(inner)
        groups_per_level = args.fake_groups if judge == "fake" else args.groups
        try:
            log(f"{judge}: warm-up, one group per rate (not measured)")
            warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
            for rate in rates:
                await measure(shared, bench_settings(tmp / f"warm-{rate}", canary_rate=rate, **base), warm, 1)
            for index, level in enumerate(levels):
                groups = make_groups(
                    max(level, groups_per_level),
                    args.answers,
                    seed=args.seed + level,
                    run_id=NAME,
                    fixed_order=True,
                )
                shift = index % len(rates)
                for rate in rates[shift:] + rates[:shift]:
                    await reset_prefix_cache(shared)
                    settings = bench_settings(tmp / f"{level}-{rate}", canary_rate=rate, **base)
                    entry = await measure(shared, settings, groups, level)
                    entry |= {
                        "judge": judge,
                        "rate": rate,
                        "concurrency": level,
                        "decoding": settings.resolved_decoding(),
                    }
                    entries.append(entry)
                    log(
                        f"{judge} c={level} rate {rate}: {entry['groups_per_s']} groups/s, p50 "
                        f"{entry['latency']['p50_ms']:.1f} ms, canaries in {entry['canary_share']:.0%}"
                    )
        finally:
            await inner.close()
    return entries


async def _main(args: argparse.Namespace) -> int:
    rates = [float(x) for x in args.rates.split(",")]
    levels = [int(x) for x in args.levels.split(",")]
    entries: list[dict[str, Any]] = []
    for judge in args.judges.split(","):
        entries += await run_judge(judge, args, rates, levels)
    by = {(e["judge"], e["concurrency"], e["rate"]): e for e in entries}
    rows = []
    for e in entries:
        base = by[(e["judge"], e["concurrency"], rates[0])]
        rows.append(
            [
                e["judge"],
                e["decoding"],
                e["concurrency"],
                e["rate"],
                e["groups"],
                e["canary_share"],
                e["groups_per_s"],
                round(e["latency"]["p50_ms"], 1),
                round(e["latency"]["p99_ms"], 1),
                e["judge_calls_per_group"],
                e["prompt_tokens_per_group"],
                e["completion_tokens_per_group"],
                ratio(e["latency"]["p50_ms"], base["latency"]["p50_ms"]),
                ratio(e["groups_per_s"], base["groups_per_s"]),
            ]
        )
    table = markdown_table(
        [
            "judge",
            "decoding",
            "groups in flight",
            "canary rate",
            "groups",
            "with a canary",
            "groups/s",
            "p50 ms",
            "p99 ms",
            "calls/group",
            "prompt tokens/group",
            "completion tokens/group",
            f"p50 / rate {rates[0]:g}",
            f"groups/s / rate {rates[0]:g}",
        ],
        rows,
    )
    write_result(NAME, {"config": vars(args), "entries": entries}, table)
    return 0 if all(not e["errors"] for e in entries) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--judges", default="fake,embedded", help="fake, embedded, comma-separated")
    parser.add_argument(
        "--rates", default="0,0.1,1", help="canary rates, comma-separated; the first is the base"
    )
    parser.add_argument("--levels", default="1,8", help="groups in flight, comma-separated")
    parser.add_argument("--groups", type=int, default=10, help="embedded judge: groups per level at least")
    parser.add_argument("--fake-groups", type=int, default=400, help="fake judge: groups per level at least")
    parser.add_argument("--answers", type=int, default=4, help="N, answers per group")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
