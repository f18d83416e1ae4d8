"""What the sandbox around grader code costs: the same code grader under `JUDGE_CODE_SANDBOX=bubblewrap`
and `process`, and inline python (a fresh worker per call) under each.

    .venv/bin/python -m benchmarks.code_sandbox [--groups 300] [--answers 8] [--workers 2] [--rounds 2]

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

import argparse
import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from benchmarks.groups import make_groups
from benchmarks.load import LoadResult, run_load
from benchmarks.report import machine_info, markdown_table, ratio, write_result
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


async def _load(url: str, path: str, bodies: list[dict[str, Any]], concurrency: int) -> LoadResult:
    async with httpx.AsyncClient(
        base_url=url, timeout=120, limits=httpx.Limits(max_connections=128)
    ) as client:

        async def call(body: dict[str, Any]) -> None:
            response = await client.post(path, json=body)
            response.raise_for_status()
            if path != "/v1/judge" and response.json()["metadata"]["errors"]["python_grader_server_error"]:
                raise RuntimeError(response.text)

        result = await run_load(bodies, call, concurrency)
    if result.errors:
        raise RuntimeError(f"{len(result.errors)} requests failed, e.g. {result.errors[0]}")
    return result


def _judging(groups: list[dict[str, Any]], grader: str) -> list[dict[str, Any]]:
    return [{**g, "grader": grader, "run_id": None, "step": None} for g in groups]


async def main(args: argparse.Namespace) -> None:
    groups = make_groups(args.groups, args.answers, seed=11)
    async with _service("process", args.workers) as plain, _service("bubblewrap", args.workers) as boxed:
        urls = {"process": plain, "bubblewrap": boxed}
        for url in urls.values():  # warm up: workers started, code paths imported
            await _load(url, "/v1/judge", _judging(groups[:32], "trivial"), 8)
            await _load(url, "/v1/fine_tuning/alpha/graders/run", [INLINE] * 4, 2)

        configured_rows, configured = [], {}
        for concurrency in (1, 64):
            count = args.groups if concurrency > 1 else max(50, args.groups // 4)
            best: dict[tuple[str, str], float] = {}
            for _ in range(args.rounds):
                for isolation, url in urls.items():
                    for grader in ("exact", "trivial"):
                        result = await _load(url, "/v1/judge", _judging(groups[:count], grader), concurrency)
                        key = (isolation, grader)
                        best[key] = max(best.get(key, 0.0), result.per_second())
            for isolation in ISOLATIONS:
                exact, code = best[(isolation, "exact")], best[(isolation, "trivial")]
                per_answer_ms = (1 / code - 1 / exact) / args.answers * 1000 if concurrency == 1 else None
                configured[f"{isolation}@{concurrency}"] = {
                    "exact_groups_per_s": exact,
                    "code_groups_per_s": code,
                    "overhead_per_answer_ms": per_answer_ms,
                }
                configured_rows.append(
                    [concurrency, isolation, exact, code, ratio(code, exact), per_answer_ms]
                )
            configured_rows.append(
                [
                    concurrency,
                    "bubblewrap / process",
                    None,
                    None,
                    ratio(best[("bubblewrap", "trivial")], best[("process", "trivial")]),
                    None,
                ]
            )

        inline_rows, inline = [], {}
        for concurrency in (1, 8):
            calls = [INLINE] * (args.inline_calls if concurrency > 1 else max(10, args.inline_calls // 4))
            rates: dict[str, float] = {}
            for _ in range(args.rounds):
                for isolation, url in urls.items():
                    result = await _load(url, "/v1/fine_tuning/alpha/graders/run", calls, concurrency)
                    rates[isolation] = max(rates.get(isolation, 0.0), result.per_second())
            for isolation in ISOLATIONS:
                inline[f"{isolation}@{concurrency}"] = {"calls_per_s": rates[isolation]}
                inline_rows.append([concurrency, isolation, rates[isolation], 1000 / rates[isolation]])
            inline_rows.append(
                [concurrency, "bubblewrap / process", ratio(rates["bubblewrap"], rates["process"]), None]
            )

    table = (
        f"A configured code grader ({args.answers} answers per group, {args.workers} workers)\n\n"
        + markdown_table(
            [
                "in flight",
                "isolation",
                "exact groups/s",
                "code groups/s",
                "code/exact",
                "overhead/answer (ms)",
            ],
            configured_rows,
        )
        + "\n\nInline python, a fresh worker per call\n\n"
        + markdown_table(["in flight", "isolation", "calls/s", "ms per call (at 1)"], inline_rows)
    )
    result = {"machine": machine_info(), "args": vars(args), "configured": configured, "inline": inline}
    write_result("code_sandbox", result, table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--answers", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--inline-calls", type=int, default=80)
    asyncio.run(main(parser.parse_args()))
