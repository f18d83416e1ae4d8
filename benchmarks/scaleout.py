"""Scale-out, side by side in one run (fake judge, no model): what the store and the process layout cost.

Part 1, the service over HTTP, closed loop at one total concurrency, the configurations interleaved
round by round (this machine is shared and noisy, so ratios within a run are what counts):

- `sqlite`: one replica on the embedded SQLite store;
- `postgres`: one replica on PostgreSQL;
- `postgres-2-replicas`: two replicas on one PostgreSQL database, the load split between them;
- `postgres-2-workers`: one replica with JUDGE_WORKERS=2 on PostgreSQL.

Reported per configuration: groups/s, latency p50/p99, and the CPU seconds every server process (workers
included) spent per group. On a 2-core machine that also runs the load generator and PostgreSQL, the
ratios say what the code allows, not what a larger machine would reach.

Part 2, the stores alone (no HTTP): acknowledged saves per second at 64 concurrent saves, with group
commit (queued saves share a transaction) and without (one transaction per save), on both stores.

    .venv/bin/python -m benchmarks scaleout [--seconds 8] [--rounds 2] [--concurrency 32]
    JUDGE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default) names the server;
    each configuration gets a database of its own, dropped afterwards (benchmarks/servers.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

from benchmarks.experiment import (
    Column,
    Experiment,
    Run,
    Sweep,
    arm_col,
    best_of,
    col,
    option,
    ratio_col,
    shared,
)
from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection, closed_loop
from benchmarks.report import percentile
from benchmarks.servers import cpu_seconds, fresh_database, server_pids, server_process, temporary_folder
from judge_service.store.group_commit import MAX_ROWS_PER_COMMIT
from judge_service.store.postgres import PostgresJudgementStore
from judge_service.store.sqlite import SqliteJudgementStore

NAME = "scaleout"
CONFIGS = ("sqlite", "postgres", "postgres-2-replicas", "postgres-2-workers")
MODES = {"group commit": MAX_ROWS_PER_COMMIT, "one save per transaction": 1}


async def measure(run: Run, config: str, _: None) -> dict[str, Any]:
    """One configuration's servers started, warmed up and loaded closed-loop for --seconds."""
    args, tmp = run.args, run.state
    bodies = make_groups(64, 8, seed=7, run_id="scaleout")
    with contextlib.ExitStack() as stack:
        env = {"JUDGE_BACKEND": "fake", "JUDGE_HOME_DIR": str(tmp / config), "JUDGE_ACCESS_LOG": "false"}
        if config != "sqlite":
            url = stack.enter_context(fresh_database())
            env |= {"JUDGE_DATABASE_URL": url, "JUDGE_MIGRATE_ON_START": "true"}
        if config == "postgres-2-workers":
            env["JUDGE_WORKERS"] = "2"
        replicas = 2 if config == "postgres-2-replicas" else 1
        servers = [
            stack.enter_context(server_process(env, tmp / f"{config}-{i}-{time.monotonic_ns()}.log"))
            for i in range(replicas)
        ]
        targets = [("127.0.0.1", int(urlsplit(url).port or 0)) for url, _ in servers]
        payloads = [
            RawHTTPConnection(*targets[0]).request_bytes("/v1/judge", json.dumps(b).encode()) for b in bodies
        ]
        # warm-up: connections, caches, pools
        await closed_loop(targets, payloads, args.concurrency, time.perf_counter() + 1.0)
        pids = [pid for _, process in servers for pid in server_pids(process.pid)]
        cpu_before = cpu_seconds(pids)
        result = await closed_loop(targets, payloads, args.concurrency, time.perf_counter() + args.seconds)
        cpu = cpu_seconds(pids) - cpu_before
    groups = len(result.latencies)
    return {
        "config": config,
        "groups_per_s": groups / result.wall_s,
        "p50_ms": percentile(result.latencies, 50) * 1000,
        "p99_ms": percentile(result.latencies, 99) * 1000,
        "server_cpu_ms_per_group": cpu / max(groups, 1) * 1000,
        "failures": sum(n for status, n in result.statuses.items() if status != 200) + len(result.errors),
        "processes": len(pids),
    }


async def store_rate(store: Any, saves: int, concurrency: int) -> float:
    from tests.store.samples import make_judgement

    judgements = [make_judgement(uuid.uuid4().hex, n=i % 50) for i in range(saves)]
    gate = asyncio.Semaphore(concurrency)

    async def save(j: Any) -> None:
        async with gate:
            await store.save(j)

    started = time.perf_counter()
    await asyncio.gather(*(save(j) for j in judgements))
    return saves / (time.perf_counter() - started)


async def group_commit(run: Run, mode: str, backend: str) -> dict[str, Any]:
    """Acknowledged saves per second at 64 concurrent saves on a fresh store, with or without group
    commit."""
    with contextlib.ExitStack() as stack:
        store: Any
        if backend == "postgres":
            url = stack.enter_context(fresh_database())
            store = PostgresJudgementStore(url, migrate_on_open=True, max_rows_per_commit=MODES[mode])
        else:
            path = run.state / f"gc-{uuid.uuid4().hex}.sqlite3"
            store = SqliteJudgementStore(path, max_rows_per_commit=MODES[mode])
        await store.open()
        try:
            return {"saves_per_s": await store_rate(store, run.args.saves, 64)}
        finally:
            await store.close()


def runs_of(cell: Any) -> str:
    return f"{cell['groups_per_s']:.0f} {[round(e['groups_per_s'], 1) for e in cell.entries]}"


EXPERIMENT = Experiment(
    options=[
        *shared(seconds=8.0, rounds=2, concurrency=32),
        option("--saves", 3000, "saves per store measurement (part 2)"),
    ],
    setup=temporary_folder,
    arms=CONFIGS,
    rounds="rounds",
    order="fixed",
    measure=measure,
    combine=best_of("groups_per_s"),
    progress=lambda e: f"{e['groups_per_s']:.0f} groups/s, p50 {e['p50_ms']:.1f} ms",
    columns=[
        arm_col("configuration"),
        col("server processes", "processes"),
        Column("groups/s (best of rounds)", runs_of),
        ratio_col("x one Postgres replica", "groups_per_s", over="postgres"),
        col("p50 ms", "p50_ms"),
        col("p99 ms", "p99_ms"),
        col("server CPU ms/group", "server_cpu_ms_per_group"),
        col("non-200", "failures"),
    ],
    parts=[
        Sweep(
            key="group_commit",
            arms=tuple(MODES),
            levels=("postgres", "sqlite"),
            level_label="",
            rounds="rounds",
            order="fixed",
            measure=group_commit,
            combine=lambda entries: {"saves_per_s": statistics.median(e["saves_per_s"] for e in entries)},
            row_arms=("group commit",),
            columns=[
                Column("store", lambda cell: cell.level),
                col("saves/s, group commit", "saves_per_s"),
                Column(
                    "saves/s, one per transaction", lambda c: c.at("one save per transaction")["saves_per_s"]
                ),
                ratio_col("ratio", "saves_per_s", over="one save per transaction"),
            ],
        )
    ],
)

EXPERIMENT.run_if_main(__name__)
