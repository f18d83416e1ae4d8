"""Server-side render time of the run pages on a large run: a step of 512 groups x 8 answers and a run of
1,000 steps.

    .venv/bin/python -m benchmarks pages [--repeats 20]

The service runs in-process on the fake judge and SQLite; the run is filled through JudgeService.grade
(so every document and summary column is what production stores): run `big-step` has one step of 512
groups of 8 answers, run `long-run` has 1,000 steps of 2 groups. Each page is then fetched --repeats
times over the ASGI interface (no network), after one warm-up; reported: median and p90 milliseconds
from request to full body, and the page size. Pages read in pages (20 groups; a run's steps by SQL
aggregate), so the figures stay flat as runs grow.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from benchmarks.engine import bench_settings, running_app
from benchmarks.experiment import Experiment, Run, arm_col, col, option
from benchmarks.report import log, percentile
from benchmarks.servers import workdir
from judge_service.backends.fake import FakeBackend
from judge_service.schemas import JudgeRequest

NAME = "pages"
PAGES = {
    "step page, 512 groups x 8 answers (first 20 groups)": "/ui/runs/big-step/steps/0",
    "run page, 1,000 steps": "/ui/runs/long-run",
    "run page, one step of 512 groups (its calibration reads them all)": "/ui/runs/big-step",
    "runs page": "/ui/runs",
    "judgement page, 8 answers": "/ui/judgements/{judgement}",
    "steps JSON, 1,000 steps": "/v1/runs/long-run/steps",
}


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


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """The service in-process on the fake judge, its runs filled; yields an ASGI client and the id of a
    judgement of the big step."""
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
                yield client, judgement.judgement_id


async def measure(run: Run, page: str, _: None) -> dict[str, Any]:
    client, judgement = run.state
    return await timed(client, PAGES[page].format(judgement=judgement), run.args.repeats)


EXPERIMENT = Experiment(
    options=[option("--repeats", 20)],
    arms=tuple(PAGES),
    order="fixed",
    progress=lambda e: f"median {e['median_ms']} ms, p90 {e['p90_ms']} ms",
    columns=[arm_col("page"), col("median ms", "median_ms"), col("p90 ms", "p90_ms"), col("bytes", "bytes")],
)

EXPERIMENT.run_if_main(__name__)
