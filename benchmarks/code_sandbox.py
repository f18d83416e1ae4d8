"""What the sandbox around grader code costs: the same code grader under `JUDGE_CODE_SANDBOX=bubblewrap`
and `process`, and inline python (a fresh worker per call) under each.

    .venv/bin/python -m benchmarks code_sandbox [--groups 300] [--answers 8] [--workers 2] [--rounds 2]

Two services in this process (fake judge, SQLite in temporary folders, uvicorn on loopback), one per
isolation, loaded over HTTP in alternating rounds (these machines are shared and noisy: the ratio from
one run is the figure; the best round of each counts):

1. Configured code grader (benchmarks/code_grader_functions.py:trivial) at 1 and 64 groups in flight,
   with the built-in `exact` rule as the floor. A configured grader's workers are started once and
   reused, so the sandbox costs only at start; the per-answer figure is (code - exact) latency / answers.
2. Inline python through /v1/fine_tuning/alpha/graders/run at 1 and 8 in flight: every call starts a
   fresh worker, so here the sandbox's start is paid per call.

`process` runs each worker as a plain child process, as the pool did before the sandbox; the two columns
side by side are the sandbox's price.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.code_graders import POOL_OPTIONS
from benchmarks.experiment import (
    Column,
    Experiment,
    Run,
    Sweep,
    best_of,
    col,
    level_col,
    option,
    ratio_col,
    shared,
)
from benchmarks.groups import make_groups
from benchmarks.load import post_all
from benchmarks.servers import in_process_server
from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

ISOLATIONS = ("process", "bubblewrap")
SPECS = [{"name": "trivial", "target": "benchmarks.code_grader_functions:trivial", "timeout_s": 10}]
INLINE = {
    "grader": {"type": "python", "name": "p", "source": "def grade(sample, item):\n    return 1.0\n"},
    "model_sample": "an answer",
}
RUN_PATH = "/v1/fine_tuning/alpha/graders/run"


@contextlib.asynccontextmanager
async def _service(isolation: str, workers: int) -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory(prefix=f"bench-sandbox-{isolation}-") as home:
        settings = Settings(
            backend="fake",
            home_dir=Path(home),
            code_graders=json.dumps(SPECS),
            code_workers=workers,
            code_sandbox=isolation,
            allow_inline_python=True,
        )
        app = create_app(settings, backend=FakeBackend(record=False))
        async with in_process_server(app, lifespan="on") as url:
            yield url


def judging(groups: list[dict[str, Any]], grader: str) -> list[dict[str, Any]]:
    return [{**g, "grader": grader, "run_id": None, "step": None} for g in groups]


def no_server_error(reply: dict[str, Any]) -> None:
    if reply["metadata"]["errors"]["python_grader_server_error"]:
        raise RuntimeError(json.dumps(reply))


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[dict[str, str]]:
    """A service per isolation, warmed up: workers started, code paths imported."""
    args = run.args
    async with _service("process", args.workers) as plain, _service("bubblewrap", args.workers) as boxed:
        urls = {"process": plain, "bubblewrap": boxed}
        for url in urls.values():
            await post_all(url, "/v1/judge", judging(make_groups(32, args.answers, seed=11), "trivial"), 8)
            await post_all(url, RUN_PATH, [INLINE] * 4, 2, check=no_server_error)
        yield urls


async def measure(run: Run, arm: str, concurrency: int) -> dict[str, Any]:
    """One round of a grader ("exact" or the code grader "trivial") under one isolation."""
    args, (isolation, grader) = run.args, arm.split()
    count = args.groups if concurrency > 1 else max(50, args.groups // 4)
    groups = make_groups(args.groups, args.answers, seed=11)[:count]
    load = await post_all(run.state[isolation], "/v1/judge", judging(groups, grader), concurrency)
    return {"groups_per_s": load.per_second(), "answers": args.answers}


async def inline(run: Run, isolation: str, concurrency: int) -> dict[str, Any]:
    """One round of inline python calls, a fresh worker each."""
    calls = run.args.inline_calls if concurrency > 1 else max(10, run.args.inline_calls // 4)
    load = await post_all(
        run.state[isolation], RUN_PATH, [INLINE] * calls, concurrency, check=no_server_error
    )
    return {"calls_per_s": load.per_second()}


def per_answer_ms(cell: Any) -> float | None:
    if cell.level != 1:
        return None
    exact = cell.at(cell.arm.replace("trivial", "exact"))["groups_per_s"]
    return (1 / cell["groups_per_s"] - 1 / exact) / cell["answers"] * 1000


def report(run: Run) -> None:
    run.result["configured"] = {
        f"{isolation}@{level}": {
            "exact_groups_per_s": run.cell(f"{isolation} exact", level)["groups_per_s"],
            "code_groups_per_s": (code := run.cell(f"{isolation} trivial", level))["groups_per_s"],
            "overhead_per_answer_ms": per_answer_ms(code),
        }
        for isolation in ISOLATIONS
        for level in (1, 64)
    }
    run.result["inline"] = {
        f"{isolation}@{level}": {"calls_per_s": run.cell(isolation, level, key="inline")["calls_per_s"]}
        for isolation in ISOLATIONS
        for level in (1, 8)
    }


EXPERIMENT = Experiment(
    options=[
        *POOL_OPTIONS,
        *shared(groups=300),
        option("--inline-calls", 80, "inline python calls per round"),
    ],
    arms=[f"{isolation} {grader}" for isolation in ISOLATIONS for grader in ("exact", "trivial")],
    levels=(1, 64),
    rounds="rounds",
    order="fixed",
    combine=best_of("groups_per_s"),
    row_arms=("process trivial", "bubblewrap trivial"),
    title=lambda run: (
        f"A configured code grader ({run.args.answers} answers per group, {run.args.workers} workers)"
    ),
    columns=[
        level_col("in flight"),
        Column("isolation", lambda cell: cell.arm.split()[0]),
        Column("exact groups/s", lambda cell: cell.at(cell.arm.replace("trivial", "exact"))["groups_per_s"]),
        col("code groups/s", "groups_per_s"),
        ratio_col("code/exact", "groups_per_s", over=lambda arm: arm.replace("trivial", "exact")),
        Column("overhead/answer (ms)", per_answer_ms),
        ratio_col("code, vs process", "groups_per_s", over="process trivial"),
    ],
    parts=[
        Sweep(
            key="inline",
            arms=ISOLATIONS,
            levels=(1, 8),
            rounds="rounds",
            order="fixed",
            measure=inline,
            combine=best_of("calls_per_s"),
            title="Inline python, a fresh worker per call",
            columns=[
                level_col("in flight"),
                Column("isolation", lambda cell: cell.arm),
                col("calls/s", "calls_per_s"),
                Column("ms per call (at 1)", lambda cell: 1000 / cell["calls_per_s"]),
                ratio_col("vs process", "calls_per_s", over="process"),
            ],
        )
    ],
)

EXPERIMENT.run_if_main(__name__)
