"""Judge requests while retention deletes a million old judgements, against the same load without it.

    .venv/bin/python -m benchmarks prune_load [--rows 1000000] [--stores sqlite,postgres]
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
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchmarks.experiment import Column, Experiment, Run, col, option, shared, words
from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection, closed_loop
from benchmarks.report import latency_summary, log, ratio
from benchmarks.servers import fresh_database, server_process, temporary_folder
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
PHASES = ("before", "pruning", "after")


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


async def load_phase(
    target: tuple[str, int], payloads: list[bytes], args: Any, base_url: str | None
) -> dict[str, Any]:
    """Judge requests on `connections` closed-loop connections for --seconds, or, with `base_url`, while
    POST /v1/prune deletes every seeded row (the load going a second before the prune starts)."""
    stop = asyncio.Event()
    load = asyncio.create_task(closed_loop([target], payloads, args.connections, stop))
    started = time.perf_counter()
    report = None
    if base_url is None:
        await asyncio.sleep(args.seconds)
    else:
        await asyncio.sleep(1.0)
        async with httpx.AsyncClient(base_url=base_url, timeout=3600) as client:
            before = (datetime.now(UTC) - timedelta(days=30)).isoformat()
            response = await client.post("/v1/prune", json={"before": before, "max_judgements": 10_000_000})
            response.raise_for_status()
            report = response.json()
    stop.set()
    result = await load
    refused = {status: n for status, n in result.statuses.items() if status != 200}
    if refused or result.errors:
        raise RuntimeError(f"judge requests answered {refused}, errors {result.errors[:3]}")
    return {
        "latency": latency_summary(result.latencies),
        "requests": len(result.latencies),
        "wall_s": time.perf_counter() - started,
        "prune": report,
    }


@contextlib.asynccontextmanager
async def store_server(run: Run, store: str) -> AsyncIterator[dict[str, Any]]:
    """A fresh database seeded with --rows old judgements, the real server on it, warmed up."""
    args, tmp = run.args, run.state
    with contextlib.ExitStack() as stack:
        if store == "postgres":
            url = stack.enter_context(fresh_database(args.postgres))
        else:
            url = f"sqlite:///{tmp / 'prune.sqlite3'}"
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
        base_url, _ = stack.enter_context(server_process(env, tmp / f"server-{store}.log"))
        target = ("127.0.0.1", int(base_url.rsplit(":", 1)[1]))
        conn = RawHTTPConnection(*target)
        payloads = [conn.request_bytes("/v1/judge", json.dumps(b).encode()) for b in bodies]
        warm = argparse.Namespace(**{**vars(args), "seconds": 2.0})
        await load_phase(target, payloads, warm, None)
        yield {"target": target, "payloads": payloads, "base_url": base_url, "seed_s": seed_s}


async def measure(run: Run, phase: str, store: str) -> dict[str, Any]:
    at = run.level_state
    entry = await load_phase(
        at["target"], at["payloads"], run.args, at["base_url"] if phase == "pruning" else None
    )
    if entry["prune"]:
        log(f"{store}: pruned {entry['prune']['judgements']} in {entry['prune']['seconds']:.1f} s")
    return entry | {"seed_s": at["seed_s"]}


def quiet_ratio(cell: Any) -> float:
    """p99 while pruning over the mean p99 of the phases before and after."""
    quiet = (cell.at("before")["latency.p99_ms"] + cell.at("after")["latency.p99_ms"]) / 2
    return ratio(cell["latency.p99_ms"], quiet)


def rows_per_s(cell: Any) -> float | None:
    prune = cell["prune"]
    return prune["judgements"] / prune["seconds"] if prune["seconds"] else None


EXPERIMENT = Experiment(
    options=[
        option("--rows", 1_000_000, "old judgements seeded"),
        option("--stores", "sqlite,postgres", "sqlite, postgres, comma-separated", type=words),
        option("--postgres", "postgresql://postgres@127.0.0.1:5432/postgres", "the PostgreSQL server"),
        *shared(seconds=(20.0, "seconds of each phase without pruning"), connections=8),
        option("--latency", 0.02, "fake judge seconds per group"),
        option("--batch-rows", 500, "JUDGE_PRUNE_BATCH_ROWS"),
    ],
    setup=temporary_folder,
    arms=PHASES,
    levels=lambda run: run.args.stores,
    level_label="",
    level_setup=store_server,
    order="fixed",
    measure=measure,
    row_arms=("pruning",),
    columns=[
        Column("store", lambda cell: cell.level),
        Column("p50 ms before", lambda cell: cell.at("before")["latency.p50_ms"]),
        Column("p99 ms before", lambda cell: cell.at("before")["latency.p99_ms"]),
        col("p50 ms pruning", "latency.p50_ms"),
        col("p99 ms pruning", "latency.p99_ms"),
        Column("p99 ms after", lambda cell: cell.at("after")["latency.p99_ms"]),
        Column("p99 pruning / without", quiet_ratio),
        col("rows pruned", "prune.judgements"),
        Column("rows/s", rows_per_s),
    ],
    report=lambda run: run.notes.append(
        f"{run.args.connections} closed-loop connections of single-group judge requests (4 answers), fake "
        f"judge {run.args.latency} s per group; JUDGE_PRUNE_BATCH_ROWS={run.args.batch_rows}; phases of "
        f"{run.args.seconds} s without pruning, and as long as the prune takes with it"
    ),
)

EXPERIMENT.run_if_main(__name__)
