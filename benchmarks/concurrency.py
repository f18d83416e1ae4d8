"""Throughput and latency of the real service at 1, 4, 16 and 64 concurrent groups.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.concurrency [--levels 1,4,16,64] [--waves 2]

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

import argparse
import asyncio
import sys
from typing import Any

from benchmarks.groups import make_groups
from benchmarks.load import LoadResult, run_load
from benchmarks.report import latency_summary, log, markdown_table, percentile, write_result
from benchmarks.servers import server_process, workdir

NAME = "concurrency"
BATCH_PATH = "/v1/judge/batch"


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


async def _main(args: argparse.Namespace) -> int:
    import httpx

    env = {
        "JUDGE_REASON_MAX_CHARS": str(args.reason_chars),
        "OMP_NUM_THREADS": "2",
    }
    results: list[dict[str, Any]] = []
    with workdir(NAME) as tmp:
        env["JUDGE_DB_PATH"] = str(tmp / "judgements.sqlite3")
        log_path = tmp / "server.log"
        log("starting the service and waiting for it to load the engine ...")
        with server_process(env, log_path, start_timeout_s=args.start_timeout) as (base_url, _):
            limits = httpx.Limits(max_connections=max(args.levels) * 2, max_keepalive_connections=None)
            async with httpx.AsyncClient(base_url=base_url, timeout=1800, limits=limits) as client:
                batch = await _has_batch(client) and not args.no_batch
                log(f"ready; batch endpoint {'present' if batch else 'absent'}; warm-up")
                warm = make_groups(2, args.answers, seed=args.seed - 1, n_criteria=args.criteria, run_id=NAME)
                await run_single(client, warm, 2)
                for index, level in enumerate(args.levels):
                    count = max(args.min_groups, level * args.waves)
                    groups = make_groups(
                        count, args.answers, seed=args.seed + index, n_criteria=args.criteria, run_id=NAME
                    )
                    runs = [("POST /v1/judge", run_single)]
                    if batch:
                        runs.append((f"POST {BATCH_PATH}", run_batched))
                        if index % 2:
                            runs.reverse()
                    for endpoint, runner in runs:
                        load, judgements = await runner(client, groups, level)
                        entry = summarize_level(endpoint, level, load, judgements)
                        results.append(entry)
                        log(
                            f"{endpoint} level {level}: {entry['groups_per_s']} groups/s, p50 "
                            f"{entry['latency']['p50_ms']:.0f} ms, p99 {entry['latency']['p99_ms']:.0f} ms, "
                            f"queue p50 {entry['queue_ms_p50']} ms, errors {len(load.errors)}"
                        )
    return _report(args, results, batch)


def _report(args: argparse.Namespace, results: list[dict[str, Any]], batch: bool) -> int:
    rows = [
        [
            r["endpoint"],
            r["level"],
            r["groups"],
            r["groups_per_s"],
            r["latency"]["p50_ms"] / 1000,
            r["latency"]["p99_ms"] / 1000,
            r["queue_ms_p50"] / 1000,
            r["completion_tokens_per_s"],
        ]
        for r in results
    ]
    table = markdown_table(
        [
            "endpoint",
            "concurrent groups",
            "groups",
            "groups/s",
            "p50 s",
            "p99 s",
            "queue p50 s",
            "generated tokens/s",
        ],
        rows,
    )
    single = {r["level"]: r for r in results if r["endpoint"] == "POST /v1/judge"}
    first = single[min(single)]["groups_per_s"] if single else None
    scaling = {lvl: round(r["groups_per_s"] / first, 2) for lvl, r in single.items()} if first else {}
    table += (
        f"\n\nScaling of groups/s vs 1 concurrent group: {scaling}. N={args.answers} answers, "
        f"{args.criteria} criterion(s), reasons <= {args.reason_chars} chars; p99 is over "
        "max(min-groups, level x waves) groups per level, so at small counts it is close to the max."
    )
    result = {
        "config": vars(args),
        "batch_endpoint_present": batch,
        "levels": results,
        "scaling_vs_level_1": scaling,
    }
    write_result(NAME, result, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16, 64])
    parser.add_argument("--waves", type=int, default=2, help="groups per level = level x waves")
    parser.add_argument("--min-groups", type=int, default=3)
    parser.add_argument("--answers", type=int, default=2)
    parser.add_argument("--criteria", type=int, default=1)
    parser.add_argument("--reason-chars", type=int, default=16)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--no-batch", action="store_true", help="skip POST /v1/judge/batch")
    parser.add_argument("--start-timeout", type=float, default=900)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
