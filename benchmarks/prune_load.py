"""Judge requests while retention deletes a million old judgements, against the same load without it.

    .venv/bin/python -m benchmarks.prune_load [--rows 1000000] [--stores sqlite,postgres]
        [--postgres postgresql://postgres@127.0.0.1:5432/postgres] [--seconds 20]

Per store: a fresh database seeded with `--rows` judgements created 60 days ago (one real stored judgement,
a four-answer group of about 2 KB, written under new ids, straight into the table), then the real server
(`python -m judge_service serve`, JUDGE_BACKEND=fake with a small fixed latency) on it, under a closed loop of
judge requests. Three phases on the same server: the load alone, the load while POST /v1/prune deletes every
seeded row (JUDGE_PRUNE_BATCH_ROWS per transaction), the load alone again. Reported: p50/p99 of the judge
requests in each phase, the ratio of p99 while pruning to p99 without, and rows pruned per second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import server_process, workdir
from judge_service.schemas import (
    AnswerResult,
    CriterionMark,
    JudgeRequest,
    StoredJudgement,
    Timings,
    Usage,
)
from judge_service.store import codec
from judge_service.store.factory import build_store
from judge_service.store.urls import is_postgres

NAME = "prune_load"
SEED_CHUNK = 20_000


def _template() -> StoredJudgement:
    body = make_groups(1, 4, seed=3, run_id="seeded")[0]
    request = JudgeRequest.model_validate(body)
    marks = {
        c.name: CriterionMark(mark=4, score=0.75, reason="Matches the reference in substance.")
        for c in (request.criteria or [])
    }
    return StoredJudgement(
        judgement_id=uuid.uuid4().hex,
        created_at=datetime.now(UTC) - timedelta(days=60),
        status="ok",
        grader="judge",
        judge_model="seeded-judge",
        prompt_version="seeded",
        run_id="seeded",
        step=1,
        group_key="g",
        answers=[
            AnswerResult(id=a.id, status="scored", score=0.75, criteria=marks, explanation="good")
            for a in request.answers
        ],
        usage=Usage(prompt_tokens=900, completion_tokens=200, judge_calls=1),
        timings=Timings(queue_ms=1.0, judge_ms=100.0, total_ms=101.0),
        attempts=1,
        request=request,
        raw_outputs=["{}"],
    )


def _rows(count: int) -> Iterator[list[tuple[object, ...]]]:
    template = codec.row(_template(), None)
    old = datetime.now(UTC) - timedelta(days=60)
    chunk: list[tuple[object, ...]] = []
    for i in range(count):
        created = (old + timedelta(milliseconds=i)).isoformat()
        chunk.append((uuid.uuid4().hex, created, *template[2:]))
        if len(chunk) == SEED_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def _migrate(url: str) -> None:
    settings = argparse.Namespace(
        database_url=None,
        database_pool_size=2,
        database_timeout_s=10.0,
        migrate_on_start=True,
        resolved_db_path=lambda: Path(url.removeprefix("sqlite:///")),
    )
    if is_postgres(url):
        from pydantic import SecretStr

        settings.database_url = SecretStr(url)
    store = build_store(settings, migrate_on_open=True)
    await store.open()
    await store.close()


def _seed(url: str, count: int) -> float:
    started = time.perf_counter()
    insert = f"INSERT INTO judgements ({codec.ROW_COLUMNS}) VALUES "
    if is_postgres(url):
        with psycopg.connect(url, autocommit=True) as pg, pg.cursor() as cur:
            for chunk in _rows(count):
                with cur.copy(f"COPY judgements ({codec.ROW_COLUMNS}) FROM STDIN") as copy:
                    for row in chunk:
                        copy.write_row(row)
            cur.execute("VACUUM ANALYZE judgements")
    else:
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as lite:
            marks = "(" + ", ".join("?" * codec.ROW_WIDTH) + ")"
            for chunk in _rows(count):
                with lite:
                    lite.executemany(insert + marks, chunk)
    return time.perf_counter() - started


def _fresh_postgres(admin_url: str) -> str:
    name = "judge_prune_bench"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    info = psycopg.conninfo.conninfo_to_dict(admin_url)
    info["dbname"] = name
    return "postgresql://{user}@{host}:{port}/{dbname}".format(
        user=info.get("user", "postgres"),
        host=info.get("host", "127.0.0.1"),
        port=info.get("port", 5432),
        dbname=name,
    )


async def _load(
    host: str, port: int, payloads: list[bytes], connections: int, stop: asyncio.Event
) -> list[float]:
    latencies: list[float] = []

    async def worker(index: int) -> None:
        connection = RawHTTPConnection(host, port)
        await connection.connect()
        i = index
        try:
            while not stop.is_set():
                started = time.perf_counter()
                status, body = await connection.send(payloads[i % len(payloads)])
                if status != 200:
                    raise RuntimeError(f"judge request answered {status}: {body[:200]!r}")
                latencies.append(time.perf_counter() - started)
                i += connections
        finally:
            await connection.close()

    await asyncio.gather(*(worker(i) for i in range(connections)))
    return latencies


async def _phase(
    host: str, port: int, payloads: list[bytes], args: argparse.Namespace, base_url: str | None
) -> dict[str, Any]:
    stop = asyncio.Event()
    load = asyncio.create_task(_load(host, port, payloads, args.connections, stop))
    started = time.perf_counter()
    report = None
    if base_url is None:
        await asyncio.sleep(args.seconds)
    else:
        await asyncio.sleep(1.0)  # the load is going before the prune starts
        async with httpx.AsyncClient(base_url=base_url, timeout=3600) as client:
            before = (datetime.now(UTC) - timedelta(days=30)).isoformat()
            response = await client.post("/v1/prune", json={"before": before, "max_judgements": 10_000_000})
            response.raise_for_status()
            report = response.json()
    stop.set()
    latencies = await load
    wall = time.perf_counter() - started
    return {
        "latency": latency_summary(latencies),
        "requests": len(latencies),
        "wall_s": wall,
        "prune": report,
    }


async def _store_run(store: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    url = _fresh_postgres(args.postgres) if store == "postgres" else f"sqlite:///{tmp / 'prune.sqlite3'}"
    await _migrate(url)
    log(f"{store}: seeding {args.rows} judgements")
    seed_s = _seed(url, args.rows)
    log(f"{store}: seeded in {seed_s:.0f} s")
    env = {
        "JUDGE_BACKEND": "fake",
        "JUDGE_FAKE_LATENCY_S": str(args.latency),
        "JUDGE_HOME_DIR": str(tmp),
        "JUDGE_DATABASE_URL": url,
        "JUDGE_PRUNE_BATCH_ROWS": str(args.batch_rows),
    }
    bodies = make_groups(32, 4, seed=11, run_id="prune-load")
    with server_process(env, tmp / f"server-{store}.log") as (base_url, _):
        host, port = "127.0.0.1", int(base_url.rsplit(":", 1)[1])
        conn = RawHTTPConnection(host, port)
        payloads = [conn.request_bytes("/v1/judge", json.dumps(b).encode()) for b in bodies]
        await _phase(host, port, payloads, argparse.Namespace(**{**vars(args), "seconds": 2.0}), None)  # warm
        before = await _phase(host, port, payloads, args, None)
        pruning = await _phase(host, port, payloads, args, base_url)
        after = await _phase(host, port, payloads, args, None)
    log(f"{store}: pruned {pruning['prune']['judgements']} in {pruning['prune']['seconds']:.1f} s")
    return {"store": store, "seed_s": seed_s, "before": before, "pruning": pruning, "after": after}


async def main_async(args: argparse.Namespace) -> None:
    runs = []
    with workdir(NAME) as tmp:
        for store in args.stores.split(","):
            runs.append(await _store_run(store, args, tmp))
    rows = []
    for run in runs:
        quiet_p99 = (run["before"]["latency"]["p99_ms"] + run["after"]["latency"]["p99_ms"]) / 2
        prune = run["pruning"]["prune"]
        rows.append(
            [
                run["store"],
                run["before"]["latency"]["p50_ms"],
                run["before"]["latency"]["p99_ms"],
                run["pruning"]["latency"]["p50_ms"],
                run["pruning"]["latency"]["p99_ms"],
                run["after"]["latency"]["p99_ms"],
                ratio(run["pruning"]["latency"]["p99_ms"], quiet_p99),
                prune["judgements"],
                prune["judgements"] / prune["seconds"] if prune["seconds"] else None,
            ]
        )
    headers = [
        "store",
        "p50 ms before",
        "p99 ms before",
        "p50 ms pruning",
        "p99 ms pruning",
        "p99 ms after",
        "p99 pruning / without",
        "rows pruned",
        "rows/s",
    ]
    note = (
        f"\n\n{args.connections} closed-loop connections of single-group judge requests (4 answers), fake "
        f"judge {args.latency} s per group; JUDGE_PRUNE_BATCH_ROWS={args.batch_rows}; phases of "
        f"{args.seconds} s without pruning, and as long as the prune takes with it"
    )
    write_result(NAME, {"args": vars(args), "runs": runs}, markdown_table(headers, rows) + note)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of each phase without pruning")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.02, help="fake judge seconds per group")
    parser.add_argument("--batch-rows", type=int, default=500)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
