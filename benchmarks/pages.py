"""Server-side render time of the run pages on a large run: a step of 512 groups x 8 answers and a run of
1,000 steps.

    .venv/bin/python -m benchmarks.pages [--repeats 20]

The service runs in-process on the fake judge and SQLite; the run is filled through JudgeService.grade
(so every document and summary column is what production stores): run `big-step` has one step of 512
groups of 8 answers, run `long-run` has 1,000 steps of 2 groups. Each page is then fetched --repeats
times over the ASGI interface (no network), after one warm-up; reported: median and p90 milliseconds
from request to full body, and the page size. Pages read in pages (20 groups; a run's steps by SQL
aggregate), so the figures stay flat as runs grow.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any

import httpx

from benchmarks.engine import bench_settings, running_app
from benchmarks.report import log, markdown_table, percentile, write_result
from benchmarks.servers import workdir
from judge_service.backends.fake import FakeBackend
from judge_service.schemas import JudgeRequest

NAME = "pages"


def body(run_id: str, step: int, index: int, answers: int) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": f"Question {index}: how do I share the report?"}],
        "reference": "Open the report, click Share and pick the client.",
        "answers": [
            {"id": f"a{i}", "text": f"Answer {i} to question {index}: " + "click Share. " * 20}
            for i in range(answers)
        ],
        "run_id": run_id,
        "step": step,
        "group_key": f"q-{step}-{index}",
    }


async def fill(service: Any, bodies: list[dict[str, Any]]) -> None:
    for start in range(0, len(bodies), 64):
        await asyncio.gather(
            *(service.grade(JudgeRequest.model_validate(b)) for b in bodies[start : start + 64])
        )


async def timed(client: httpx.AsyncClient, path: str, repeats: int) -> dict[str, Any]:
    warm = await client.get(path)
    assert warm.status_code == 200, (path, warm.status_code, warm.text[:300])
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        reply = await client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert reply.status_code == 200
    return {
        "path": path,
        "median_ms": round(statistics.median(times), 1),
        "p90_ms": round(percentile(times, 90), 1),
        "bytes": len(warm.content),
    }


async def _main(args: argparse.Namespace) -> int:
    with workdir(NAME) as tmp:
        settings = bench_settings(tmp, backend="fake", max_groups_in_flight=64, max_groups_queued=1024)
        async with running_app(settings, FakeBackend(record=False)) as app:
            service = app.state.service
            log("filling: 512 groups x 8 answers at one step, 1,000 steps x 2 groups ...")
            started = time.perf_counter()
            await fill(service, [body("big-step", 0, i, 8) for i in range(512)])
            await fill(service, [body("long-run", s, i, 4) for s in range(1000) for i in range(2)])
            log(f"filled in {time.perf_counter() - started:.1f} s")
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                judgement = (await service.list_run("big-step", step=0, limit=1, cursor=None)).items[0]
                pages = [
                    ("step page, 512 groups x 8 answers (first 20 groups)", "/ui/runs/big-step/steps/0"),
                    ("run page, 1,000 steps", "/ui/runs/long-run"),
                    (
                        "run page, one step of 512 groups (its calibration reads them all)",
                        "/ui/runs/big-step",
                    ),
                    ("runs page", "/ui/runs"),
                    ("judgement page, 8 answers", f"/ui/judgements/{judgement.judgement_id}"),
                    ("steps JSON, 1,000 steps", "/v1/runs/long-run/steps"),
                ]
                results = []
                for label, path in pages:
                    result = {"page": label, **await timed(client, path, args.repeats)}
                    log(f"{label}: median {result['median_ms']} ms, p90 {result['p90_ms']} ms")
                    results.append(result)
    table = markdown_table(
        ["page", "median ms", "p90 ms", "bytes"],
        [[r["page"], r["median_ms"], r["p90_ms"], r["bytes"]] for r in results],
    )
    write_result(NAME, {"config": vars(args), "pages": results}, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
