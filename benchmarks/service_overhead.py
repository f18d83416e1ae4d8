"""What the HTTP service adds on top of the engine: the same groups through the full service and straight
into the same engine instance, in alternating rounds of one process run.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks service_overhead [--groups 16] [--pairs 3]

One vLLM engine is loaded once. The service is the real app (create_app with that engine lent to it)
served by uvicorn on loopback inside this process, driven by an httpx client at --concurrency. The
direct path replays, through VLLMEngineBackend.generate at the same concurrency, the very
GenerationRequests the service sent for these groups (recorded in a first, unmeasured round), so the
prompts, schema and sampling are identical by construction. Rounds alternate direct/service,
service/direct, ... to cancel drift; the prefix cache is emptied before every round, and answer orders
are pinned (the request `seed`), so every round does the same engine work. parse_retries is 0 and the
decoding `group` (one reply marks every answer), so one group is exactly one engine call on both paths.

Reported: groups/s of each path over all its rounds, the ratio service/direct (goal: overhead < 5%), the
per-pair ratios, and per-group latency on each path.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.engine import RecordingBackend, judge_on_engine, reset_prefix_cache
from benchmarks.experiment import Column, Experiment, Run, arm_col, col, pool, shared
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import log, ratio
from benchmarks.servers import in_process_server
from judge_service.backends.base import Generation, GenerationRequest

NAME = "service_overhead"


@dataclass
class Paths:
    """The groups, the client of the served app, the engine, and the service's recorded requests."""

    groups: list[dict[str, Any]]
    client: Any
    engine: Any
    requests: list[GenerationRequest]

    async def via_service(self, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post("/v1/judge", json=body)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    async def direct(self, request: GenerationRequest) -> Generation:
        reply: Generation = await self.engine.generate(replace(request, request_id=uuid.uuid4().hex))
        return reply


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[Paths]:
    """One engine lent to the app, served on loopback; a first, unmeasured round through the service
    records the requests the direct path replays."""
    import httpx

    args = run.args
    groups = make_groups(
        args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME, fixed_order=True
    )
    async with (
        judge_on_engine(
            NAME,
            lend=RecordingBackend,
            reason_max_chars=args.reason_chars,
            parse_retries=0,
            decoding="group",  # one engine call a group on both paths, as the direct path replays
        ) as judge,
        in_process_server(judge.app) as base_url,
        httpx.AsyncClient(
            base_url=base_url, timeout=900, limits=httpx.Limits(max_connections=args.concurrency * 2)
        ) as client,
    ):
        paths, recorder = Paths(groups, client, judge.engine, []), judge.lent
        assert isinstance(recorder, RecordingBackend)
        log(f"recording round: {len(groups)} groups through the service (not measured)")
        recorder.recording = True
        warm = await run_load(groups, paths.via_service, args.concurrency)
        recorder.recording = False
        if warm.errors or len(recorder.requests) != len(groups):
            raise RuntimeError(f"recording round: {len(recorder.requests)} calls, errors {warm.errors[:3]}")
        paths.requests = list(recorder.requests)
        yield paths


async def measure(run: Run, path: str, _: None) -> dict[str, Any]:
    """One round of one path over the same groups, the prefix cache emptied first."""
    paths, concurrency = run.state, run.args.concurrency
    await reset_prefix_cache(paths.engine)
    started_cpu = time.process_time()
    if path == "direct":
        load = await run_load(paths.requests, paths.direct, concurrency)
        completion = sum(g.completion_tokens for g in load.results)
        prompt = sum(g.prompt_tokens for g in load.results)
        judge_ms: list[float] = []
    else:
        load = await run_load(paths.groups, paths.via_service, concurrency)
        completion = sum(r["usage"]["completion_tokens"] for r in load.results)
        prompt = sum(r["usage"]["prompt_tokens"] for r in load.results)
        judge_ms = [r["timings"]["judge_ms"] for r in load.results]
    return {
        "path": path,
        "groups": load.ok,
        "errors": load.errors[:3],
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "main_process_cpu_s": round(time.process_time() - started_cpu, 3),
        "latencies_s": [round(x, 4) for x in load.latencies_s],
        "service_judge_ms_mean": round(sum(judge_ms) / len(judge_ms), 2) if judge_ms else None,
    }


def report(run: Run) -> None:
    args = run.args
    pair_ratios = run.round_ratios("service", "direct")
    overall = ratio(run.cell("service")["groups_per_s"], run.cell("direct")["groups_per_s"])
    overhead_pct = round((1 - overall) * 100, 2)
    run.result |= {
        "paths": {path: run.cell(path).entry for path in ("direct", "service")},
        "ratio_service_over_direct": overall,
        "overhead_pct": overhead_pct,
        "pair_ratios": pair_ratios,
        "goal_overhead_pct": 5.0,
        "goal_met": overhead_pct < 5.0,
        "parse_retries": 0,
        "prefix_cache_reset_each_round": True,
    }
    run.notes.append(
        f"service / direct = **{overall}** (overhead {overhead_pct}%, goal < 5%); per pair: "
        f"{', '.join(str(r) for r in pair_ratios)}. N={args.answers} answers, {args.criteria} criterion(s), "
        f"reasons <= {args.reason_chars} chars, concurrency {args.concurrency}, "
        f"{args.groups} groups per round."
    )


EXPERIMENT = Experiment(
    options=[
        *shared(groups=16, pairs=3, concurrency=8),
        *shared(answers=2, criteria=1, reason_chars=(16, "reason_max_chars (>= 16)"), seed=11),
    ],
    arms=("direct", "service"),
    rounds="pairs",
    order="alternate",
    combine=pool,
    columns=[
        arm_col("path"),
        col("groups", "groups"),
        col("groups/s", "groups_per_s"),
        col("p50 ms", "latency.p50_ms"),
        col("p99 ms", "latency.p99_ms"),
        col("completion tokens", "completion_tokens"),
        Column("errors", lambda cell: len(cell["errors"])),
    ],
)

EXPERIMENT.run_if_main(__name__)
