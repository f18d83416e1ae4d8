"""What graders written as code cost: the worker pool's overhead per answer, and what a grader that hangs
does to everyone else.

    .venv/bin/python -m benchmarks.code_graders [--groups 400] [--answers 8] [--workers 2]

One service in this process (fake judge, SQLite in a temporary folder, uvicorn on loopback, the pool's
workers as child processes), loaded over HTTP:

1. Overhead: the same groups graded by the built-in `exact` rule and by a trivial code grader
   (benchmarks/code_grader_functions.py), at 1 and at 64 groups in flight, in alternating rounds (these
   machines are shared and noisy: the ratio from one run is the figure; the best round of each counts).
   Overhead per answer = (code grader's latency - exact's) / answers per group at 1 in flight; at 64, the
   throughput ratio.
2. A hanging grader: 10% of groups are sent to a code grader that hangs on one of their answers until
   its timeout (1 s) kills the worker (the group's other answers are graded); the other 90% are ordinary
   groups, graded by `exact` (no worker) and, in a second round, by the trivial code grader (sharing the
   pool with the hanging one). p99 of the ordinary groups, each against a round with no hanging groups.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import latency_summary, machine_info, markdown_table, ratio, write_result
from benchmarks.servers import in_process_server
from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

HANG_TIMEOUT_S = 1.0
SPECS = [
    {"name": "trivial", "target": "benchmarks.code_grader_functions:trivial", "timeout_s": 10},
    {
        "name": "hangs",
        "target": "benchmarks.code_grader_functions:hangs_when_asked",
        "timeout_s": HANG_TIMEOUT_S,
    },
]


async def _round(url: str, groups: list[dict[str, Any]], concurrency: int) -> tuple[Any, list[float]]:
    """(load result, latencies of the ordinary groups: those not asking to hang)."""
    ordinary: list[float] = []
    async with httpx.AsyncClient(
        base_url=url, timeout=120, limits=httpx.Limits(max_connections=128)
    ) as client:

        async def call(body: dict[str, Any]) -> None:
            started = asyncio.get_running_loop().time()
            response = await client.post("/v1/judge", json=body)
            response.raise_for_status()
            if not (body.get("item") or {}).get("hang"):
                ordinary.append(asyncio.get_running_loop().time() - started)

        result = await run_load(groups, call, concurrency)
    if result.errors:
        raise RuntimeError(f"{len(result.errors)} requests failed, e.g. {result.errors[0]}")
    return result, ordinary


def _with(
    groups: list[dict[str, Any]], grader: str, item: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [
        {**g, "grader": grader, "run_id": None, "step": None, **({"item": item} if item else {})}
        for g in groups
    ]


async def main(args: argparse.Namespace) -> None:
    groups = make_groups(args.groups, args.answers, seed=7)
    with tempfile.TemporaryDirectory(prefix="bench-code-") as home:
        settings = Settings(
            backend="fake", home_dir=Path(home), code_graders=json.dumps(SPECS), code_workers=args.workers
        )
        app = create_app(settings, backend=FakeBackend(record=False))
        async with in_process_server(app, lifespan="on") as url:
            await _round(url, _with(groups[:32], "trivial"), 8)  # warm up
            overhead_rows, overhead = [], {}
            for concurrency in (1, 64):
                count = args.groups if concurrency > 1 else max(50, args.groups // 4)
                timings: dict[str, list[Any]] = {"exact": [], "trivial": []}
                for _ in range(args.rounds):
                    for grader in ("exact", "trivial"):
                        result, _ = await _round(url, _with(groups[:count], grader), concurrency)
                        timings[grader].append(result)
                exact_rate = max(r.per_second() for r in timings["exact"])
                code_rate = max(r.per_second() for r in timings["trivial"])
                # One in flight: the latency difference is the pool's cost. Many in flight: the service's
                # own limit (HTTP, storing every judgement) decides, so only the throughput ratio says.
                per_answer_ms = (
                    (1 / code_rate - 1 / exact_rate) / args.answers * 1000 if concurrency == 1 else None
                )
                overhead[concurrency] = {
                    "exact_groups_per_s": exact_rate,
                    "code_groups_per_s": code_rate,
                    "throughput_ratio_code_vs_exact": ratio(code_rate, exact_rate),
                    "overhead_per_answer_ms": None if per_answer_ms is None else round(per_answer_ms, 3),
                }
                overhead_rows.append(
                    [concurrency, exact_rate, code_rate, ratio(code_rate, exact_rate), per_answer_ms]
                )

            hang_rows, hang = [], {}
            hanging = set(range(0, args.groups, 10))  # every tenth group: 10%
            for ordinary_grader in ("exact", "trivial"):
                mixed = [
                    {**g, "grader": "hangs", "item": {"hang": g["answers"][0]["text"]}}
                    if i in hanging
                    else {**g, "grader": ordinary_grader}
                    for i, g in enumerate(_with(groups, ordinary_grader))
                ]
                _, calm = await _round(url, _with(groups, ordinary_grader), args.concurrency)
                _, stormy = await _round(url, mixed, args.concurrency)
                calm_p, stormy_p = latency_summary(calm), latency_summary(stormy)
                hang[ordinary_grader] = {"no_hangs": calm_p, "with_10pct_hanging": stormy_p}
                hang_rows.append(
                    [
                        ordinary_grader,
                        calm_p["p50_ms"],
                        calm_p["p99_ms"],
                        stormy_p["p50_ms"],
                        stormy_p["p99_ms"],
                        ratio(stormy_p["p99_ms"], calm_p["p99_ms"]),
                    ]
                )

    table = (
        f"Overhead of the worker pool ({args.answers} answers per group, {args.workers} workers)\n\n"
        + markdown_table(
            ["in flight", "exact groups/s", "code groups/s", "code/exact", "overhead per answer (ms)"],
            overhead_rows,
        )
        + f"\n\nOrdinary groups while 10% hang until their {HANG_TIMEOUT_S:g} s timeout "
        + f"({args.concurrency} in flight)\n\n"
        + markdown_table(
            [
                "ordinary grader",
                "p50 calm (ms)",
                "p99 calm (ms)",
                "p50 with hangs",
                "p99 with hangs",
                "p99 ratio",
            ],
            hang_rows,
        )
    )
    result = {"machine": machine_info(), "args": vars(args), "overhead": overhead, "hanging": hang}
    write_result("code_graders", result, table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=400)
    parser.add_argument("--answers", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16, help="in flight in the hanging-grader part")
    asyncio.run(main(parser.parse_args()))
