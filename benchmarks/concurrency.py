"""Throughput and latency of the real service at 1, 4, 16 and 64 concurrent groups.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks concurrency [--levels 1,4,16,64] [--waves 2]

The server is `python -m judge_service serve` in a subprocess with its default settings (vLLM engine on
the embedded model, admission of 32 groups in flight) except small groups for a CPU: JUDGE_* reason
length --reason-chars, and --answers answers with --criteria criteria per group. This process is the
client (httpx, closed loop: each of `level` workers sends its next group when the last returns), for
max(--min-groups, level x --waves) distinct groups per level. Where the service has POST
/v1/judge/batch, each level is also run as batches of `level` groups, one batch in flight at a time
(the same number of groups in the engine), in alternating order with the single-group endpoint.

Reported per level: groups/s, p50/p99 group latency, the service's own queue wait (admission) and
judge time, and generated tokens/s.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from benchmarks.experiment import Experiment, Run, arm_col, col, level_col, option, seconds_col, shared
from benchmarks.groups import make_groups
from benchmarks.load import LoadResult, run_load
from benchmarks.report import latency_summary, log, percentile
from benchmarks.servers import server_process, workdir

NAME = "concurrency"
BATCH_PATH = "/v1/judge/batch"
SINGLE = "POST /v1/judge"


async def _has_batch(client: Any) -> bool:
    spec = (await client.get("/openapi.json")).json()
    return BATCH_PATH in spec.get("paths", {})


async def run_single(client: Any, groups: list[dict[str, Any]], level: int) -> tuple[LoadResult, list[Any]]:
    async def call(body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post("/v1/judge", json=body)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    load = await run_load(groups, call, level)
    return load, list(load.results)


async def run_batched(client: Any, groups: list[dict[str, Any]], level: int) -> tuple[LoadResult, list[Any]]:
    batches = [groups[i : i + level] for i in range(0, len(groups), level)]

    async def call(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        response = await client.post(BATCH_PATH, json={"groups": batch})
        response.raise_for_status()
        results: list[dict[str, Any]] = response.json()["results"]
        return results

    load = await run_load(batches, call, 1)
    judgements = [item["judgement"] for batch in load.results for item in batch if item.get("judgement")]
    failed = sum(1 for batch in load.results for item in batch if item.get("error"))
    load.errors += [f"{failed} groups failed inside batches"] if failed else []
    # Every group of a batch waits for the whole batch: repeat its latency once per group.
    load.latencies_s = [lat for lat, batch in zip(load.latencies_s, load.results, strict=True) for _ in batch]
    return load, judgements


def summarize_level(
    endpoint: str, level: int, load: LoadResult, judgements: list[dict[str, Any]]
) -> dict[str, Any]:
    completion = sum(j["usage"]["completion_tokens"] for j in judgements)
    prompt = sum(j["usage"]["prompt_tokens"] for j in judgements)
    queue_ms = [j["timings"]["queue_ms"] for j in judgements]
    judge_ms = [j["timings"]["judge_ms"] for j in judgements]
    return {
        "endpoint": endpoint,
        "level": level,
        "groups": len(judgements),
        "errors": load.errors[:3],
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(len(judgements) / load.wall_s, 4) if load.wall_s else None,
        "latency": latency_summary(load.latencies_s),
        "queue_ms_p50": round(percentile(queue_ms, 50), 1),
        "judge_ms_p50": round(percentile(judge_ms, 50), 1),
        "judge_calls": sum(j["usage"]["judge_calls"] for j in judgements),
        "completion_tokens_per_s": round(completion / load.wall_s, 1) if load.wall_s else None,
        "prompt_tokens_per_s": round(prompt / load.wall_s, 1) if load.wall_s else None,
        "ok_groups": sum(1 for j in judgements if j["status"] == "ok"),
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[Any]:
    """`python -m judge_service serve` in a subprocess (its defaults but small groups for a CPU) and an
    httpx client; whether the batch endpoint is there goes to the result."""
    import httpx

    args = run.args
    env = {"JUDGE_REASON_MAX_CHARS": str(args.reason_chars), "OMP_NUM_THREADS": "2"}
    with workdir(NAME) as tmp:
        env["JUDGE_DB_PATH"] = str(tmp / "judgements.sqlite3")
        log("starting the service and waiting for it to load the engine ...")
        with server_process(env, tmp / "server.log", start_timeout_s=args.start_timeout) as (base_url, _):
            limits = httpx.Limits(max_connections=max(args.levels) * 2, max_keepalive_connections=None)
            async with httpx.AsyncClient(base_url=base_url, timeout=1800, limits=limits) as client:
                batch = await _has_batch(client) and not args.no_batch
                run.result["batch_endpoint_present"] = batch
                log(f"ready; batch endpoint {'present' if batch else 'absent'}; warm-up")
                warm = make_groups(2, args.answers, seed=args.seed - 1, n_criteria=args.criteria, run_id=NAME)
                await run_single(client, warm, 2)
                yield client


async def measure(run: Run, endpoint: str, level: int) -> dict[str, Any]:
    args = run.args
    index = args.levels.index(level)
    count = max(args.min_groups, level * args.waves)
    groups = make_groups(count, args.answers, seed=args.seed + index, n_criteria=args.criteria, run_id=NAME)
    runner = run_single if endpoint == SINGLE else run_batched
    load, judgements = await runner(run.state, groups, level)
    return summarize_level(endpoint, level, load, judgements)


def report(run: Run) -> None:
    args = run.args
    single = {level: run.cell(SINGLE, level)["groups_per_s"] for level in args.levels}
    first = single[min(single)]
    scaling = {level: round(gps / first, 2) for level, gps in single.items()} if first else {}
    run.result["scaling_vs_level_1"] = scaling
    run.notes.append(
        f"Scaling of groups/s vs 1 concurrent group: {scaling}. N={args.answers} answers, "
        f"{args.criteria} criterion(s), reasons <= {args.reason_chars} chars; p99 is over "
        "max(min-groups, level x waves) groups per level, so at small counts it is close to the max."
    )


EXPERIMENT = Experiment(
    options=[
        *shared(levels="1,4,16,64", waves=(2, "groups per level = level x waves"), min_groups=3),
        *shared(answers=2, criteria=1, reason_chars=16, seed=31),
        option("--no-batch", help="skip POST /v1/judge/batch", action="store_true"),
        option("--start-timeout", 900.0, "seconds the service may take to load the engine"),
    ],
    arms=lambda run: [SINGLE, f"POST {BATCH_PATH}"] if run.result["batch_endpoint_present"] else [SINGLE],
    levels="levels",
    order="alternate",
    columns=[
        arm_col("endpoint"),
        level_col("concurrent groups"),
        col("groups", "groups"),
        col("groups/s", "groups_per_s"),
        seconds_col("p50 s", "latency.p50_ms"),
        seconds_col("p99 s", "latency.p99_ms"),
        col("queue p50 s", "queue_ms_p50", scale=0.001),
        col("generated tokens/s", "completion_tokens_per_s"),
    ],
)

EXPERIMENT.run_if_main(__name__)
