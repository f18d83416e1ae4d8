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

    .venv/bin/python -m benchmarks.scaleout [--seconds 8] [--rounds 2] [--concurrency 32]
    JUDGE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default) names the server;
    each configuration gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection
from benchmarks.report import log, markdown_table, percentile, ratio, write_result
from benchmarks.servers import process_cpu_seconds, server_process, workdir
from judge_service.store.group_commit import MAX_ROWS_PER_COMMIT
from judge_service.store.postgres import PostgresJudgementStore
from judge_service.store.sqlite import SqliteJudgementStore

NAME = "scaleout"
SERVER = os.environ.get("JUDGE_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
CONFIGS = ("sqlite", "postgres", "postgres-2-replicas", "postgres-2-workers")


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    name = f"judge_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(SERVER)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(SERVER, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_pids(pid: int) -> list[int]:
    """A server process and its children (uvicorn's workers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(c) for c in children.read_text().split()] if children.exists() else []
    return [pid, *found]


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += process_cpu_seconds(pid)
    return total


async def drive(ports: list[int], payloads: list[bytes], concurrency: int, seconds: float) -> dict[str, Any]:
    """Closed loop over `concurrency` keep-alive connections spread round robin over `ports`."""
    connections = [RawHTTPConnection("127.0.0.1", ports[i % len(ports)]) for i in range(concurrency)]
    for connection in connections:
        await connection.connect()
    latencies: list[float] = []
    failures = 0
    deadline = time.perf_counter() + seconds

    async def worker(index: int, connection: RawHTTPConnection) -> None:
        nonlocal failures
        i = index
        while time.perf_counter() < deadline:
            payload = payloads[i % len(payloads)]
            i += concurrency
            started = time.perf_counter()
            status, _ = await connection.send(payload)
            latencies.append(time.perf_counter() - started)
            failures += status != 200

    started = time.perf_counter()
    await asyncio.gather(*(worker(i, c) for i, c in enumerate(connections)))
    wall = time.perf_counter() - started
    for connection in connections:
        await connection.close()
    return {"wall_s": wall, "groups": len(latencies), "failures": failures, "latencies": latencies}


async def measure(
    config: str, tmp: Path, bodies: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
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
        ports = [int(urlsplit(url).port or 0) for url, _ in servers]
        payloads = [
            RawHTTPConnection("127.0.0.1", ports[0]).request_bytes("/v1/judge", json.dumps(b).encode())
            for b in bodies
        ]
        await drive(ports, payloads, args.concurrency, 1.0)  # warm-up: connections, caches, pools
        pids = [pid for _, process in servers for pid in server_pids(process.pid)]
        cpu_before = cpu_seconds(pids)
        result = await drive(ports, payloads, args.concurrency, args.seconds)
        cpu = cpu_seconds(pids) - cpu_before
    lat = result["latencies"]
    return {
        "config": config,
        "groups_per_s": result["groups"] / result["wall_s"],
        "p50_ms": percentile(lat, 50) * 1000,
        "p99_ms": percentile(lat, 99) * 1000,
        "server_cpu_ms_per_group": cpu / max(result["groups"], 1) * 1000,
        "failures": result["failures"],
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


async def group_commit(tmp: Path, saves: int, rounds: int) -> list[dict[str, Any]]:
    rows = []
    for backend in ("postgres", "sqlite"):
        rates: dict[str, list[float]] = {"group commit": [], "one save per transaction": []}
        for _ in range(rounds):
            for mode, per_commit in (("group commit", MAX_ROWS_PER_COMMIT), ("one save per transaction", 1)):
                with contextlib.ExitStack() as stack:
                    store: Any
                    if backend == "postgres":
                        url = stack.enter_context(fresh_database())
                        store = PostgresJudgementStore(
                            url, migrate_on_open=True, max_rows_per_commit=per_commit
                        )
                    else:
                        path = tmp / f"gc-{uuid.uuid4().hex}.sqlite3"
                        store = SqliteJudgementStore(path, max_rows_per_commit=per_commit)
                    await store.open()
                    try:
                        rates[mode].append(await store_rate(store, saves, 64))
                    finally:
                        await store.close()
        grouped, single = (statistics.median(rates[m]) for m in rates)
        rows.append({"store": backend, "group_commit_saves_per_s": grouped, "single_saves_per_s": single,
                     "ratio": ratio(grouped, single)})  # fmt: skip
        log(f"{backend}: group commit {grouped:.0f}/s vs one per transaction {single:.0f}/s")
    return rows


async def main_async(args: argparse.Namespace) -> None:
    bodies = make_groups(64, 8, seed=7, run_id="scaleout")
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
    with workdir("scaleout-") as tmp:
        for round_no in range(args.rounds):
            for config in CONFIGS:
                log(f"round {round_no + 1}: {config}")
                runs[config].append(await measure(config, tmp, bodies, args))
        commit_rows = await group_commit(tmp, args.saves, args.rounds)
    summary = []
    for config in CONFIGS:
        best = max(runs[config], key=lambda r: r["groups_per_s"])
        summary.append({**best, "groups_per_s_runs": [round(r["groups_per_s"], 1) for r in runs[config]]})
    base = summary[1]["groups_per_s"]  # one replica on PostgreSQL
    table = markdown_table(
        ["configuration", "server processes", "groups/s (best of rounds)", "x one Postgres replica", "p50 ms",
         "p99 ms", "server CPU ms/group", "non-200"],
        [[r["config"], r["processes"], f"{r['groups_per_s']:.0f} {r['groups_per_s_runs']}",
          f"{ratio(r['groups_per_s'], base):.2f}", f"{r['p50_ms']:.1f}", f"{r['p99_ms']:.1f}",
          f"{r['server_cpu_ms_per_group']:.2f}", r["failures"]] for r in summary],
    )  # fmt: skip
    table += "\n\n" + markdown_table(
        ["store", "saves/s, group commit", "saves/s, one per transaction", "ratio"],
        [[r["store"], f"{r['group_commit_saves_per_s']:.0f}", f"{r['single_saves_per_s']:.0f}",
          f"{r['ratio']:.1f}"] for r in commit_rows],
    )  # fmt: skip
    write_result(
        NAME,
        {"settings": vars(args), "configurations": summary, "runs": runs, "group_commit": commit_rows},
        table,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--saves", type=int, default=3000, help="saves per store measurement (part 2)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
