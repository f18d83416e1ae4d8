"""What graders written as code cost: the worker pool's overhead per answer, and what a grader that hangs
does to everyone else.

    .venv/bin/python -m benchmarks code_graders [--groups 400] [--answers 8] [--workers 2]

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

import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.experiment import Column, Experiment, Run, Sweep, best_of, col, level_col, ratio_col, shared
from benchmarks.groups import make_groups
from benchmarks.load import post_all
from benchmarks.report import latency_summary, ratio
from benchmarks.servers import in_process_server
from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

POOL_OPTIONS = shared(answers=8, workers=2, rounds=2)
HANG_TIMEOUT_S = 1.0
SPECS = [
    {"name": "trivial", "target": "benchmarks.code_grader_functions:trivial", "timeout_s": 10},
    {
        "name": "hangs",
        "target": "benchmarks.code_grader_functions:hangs_when_asked",
        "timeout_s": HANG_TIMEOUT_S,
    },
]


def graded_by(
    groups: list[dict[str, Any]], grader: str, item: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [
        {**g, "grader": grader, "run_id": None, "step": None, **({"item": item} if item else {})}
        for g in groups
    ]


async def ordinary_latencies(url: str, bodies: list[dict[str, Any]], concurrency: int) -> list[float]:
    """Latencies of the groups that do not ask to hang."""
    load = await post_all(url, "/v1/judge", bodies, concurrency)
    return [t for t, (body, _) in zip(load.latencies_s, load.results, strict=True) if not body.get("item")]


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[str]:
    """One service in this process (fake judge, the code graders of SPECS), served on loopback."""
    with tempfile.TemporaryDirectory(prefix="bench-code-") as home:
        settings = Settings(
            backend="fake", home_dir=Path(home), code_graders=json.dumps(SPECS), code_workers=run.args.workers
        )
        app = create_app(settings, backend=FakeBackend(record=False))
        async with in_process_server(app, lifespan="on") as url:
            await post_all(
                url, "/v1/judge", graded_by(make_groups(32, run.args.answers, seed=7), "trivial"), 8
            )
            yield url


async def measure(run: Run, grader: str, concurrency: int) -> dict[str, Any]:
    """One round of one grader: groups/s."""
    args = run.args
    count = args.groups if concurrency > 1 else max(50, args.groups // 4)
    groups = make_groups(args.groups, args.answers, seed=7)[:count]
    load = await post_all(run.state, "/v1/judge", graded_by(groups, grader), concurrency)
    return {"groups_per_s": load.per_second(), "answers": args.answers}


def per_answer_ms(cell: Any) -> float | None:
    """One in flight: the latency difference is the pool's cost. Many in flight: the service's own limit
    (HTTP, storing every judgement) decides, so only the throughput ratio says."""
    if cell.level != 1:
        return None
    exact = cell.at("exact")["groups_per_s"]
    return (1 / cell["groups_per_s"] - 1 / exact) / cell.entries[0]["answers"] * 1000


async def hanging(run: Run, ordinary: str, _: None) -> dict[str, Any]:
    """The ordinary groups' latency without and with 10% of groups hanging until their timeout."""
    args = run.args
    groups = make_groups(args.groups, args.answers, seed=7)
    hangs = set(range(0, args.groups, 10))  # every tenth group: 10%
    mixed = [
        {**g, "grader": "hangs", "item": {"hang": g["answers"][0]["text"]}} if i in hangs else g
        for i, g in enumerate(graded_by(groups, ordinary))
    ]
    calm = await ordinary_latencies(run.state, graded_by(groups, ordinary), args.concurrency)
    stormy = await ordinary_latencies(run.state, mixed, args.concurrency)
    return {"no_hangs": latency_summary(calm), "with_10pct_hanging": latency_summary(stormy)}


def report(run: Run) -> None:
    run.result["overhead"] = {
        level: {
            "exact_groups_per_s": run.cell("exact", level)["groups_per_s"],
            "code_groups_per_s": (code := run.cell("trivial", level))["groups_per_s"],
            "throughput_ratio_code_vs_exact": ratio(
                code["groups_per_s"], run.cell("exact", level)["groups_per_s"]
            ),
            "overhead_per_answer_ms": None if (ms := per_answer_ms(code)) is None else round(ms, 3),
        }
        for level in (1, 64)
    }
    run.result["hanging"] = {arm: run.cell(arm, key="hanging").entry for arm in ("exact", "trivial")}


EXPERIMENT = Experiment(
    options=[
        *POOL_OPTIONS,
        *shared(groups=400, concurrency=(16, "in flight in the hanging-grader part")),
    ],
    arms=("exact", "trivial"),
    levels=(1, 64),
    rounds="rounds",
    order="fixed",
    combine=best_of("groups_per_s"),
    row_arms=("trivial",),
    title=lambda run: (
        f"Overhead of the worker pool ({run.args.answers} answers per group, {run.args.workers} workers)"
    ),
    columns=[
        level_col("in flight"),
        Column("exact groups/s", lambda cell: cell.at("exact")["groups_per_s"]),
        col("code groups/s", "groups_per_s"),
        ratio_col("code/exact", "groups_per_s", over="exact"),
        Column("overhead per answer (ms)", per_answer_ms),
    ],
    parts=[
        Sweep(
            key="hanging",
            arms=("exact", "trivial"),
            measure=hanging,
            title=lambda run: (
                f"Ordinary groups while 10% hang until their {HANG_TIMEOUT_S:g} s timeout "
                f"({run.args.concurrency} in flight)"
            ),
            columns=[
                Column("ordinary grader", lambda cell: cell.arm),
                col("p50 calm (ms)", "no_hangs.p50_ms"),
                col("p99 calm (ms)", "no_hangs.p99_ms"),
                col("p50 with hangs", "with_10pct_hanging.p50_ms"),
                col("p99 with hangs", "with_10pct_hanging.p99_ms"),
                Column("p99 ratio", lambda c: ratio(c["with_10pct_hanging.p99_ms"], c["no_hangs.p99_ms"])),
            ],
        )
    ],
)

EXPERIMENT.run_if_main(__name__)
