"""Group assembly's cost, side by side in one run against a service process (fake judge that takes
JUDGE_FAKE_LATENCY_S per call, so a judge time exists to wait beyond):

- group mode: each group of 8 answers as one POST /v1/judge, at `--groups-per-s`;
- member mode: the same groups as 8 POST /v1/judge/member requests each, sent together (8 x the rate in
  members/s). The load goes over persistent raw HTTP/1.1 connections (benchmarks/rawhttp.py), so it costs
  the cores far less than the service does.

Reported per mode (alternating phases): groups/s and members/s achieved, request latency p50/p99, and the
server's CPU per group; then the assembly overhead per member (the CPU difference over 8) and the wait a
member adds beyond its group's judge time (member p50 minus group p50).

    .venv/bin/python -m benchmarks member_assembly [--groups-per-s 125] [--seconds 5] [--rounds 2]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from benchmarks.experiment import Experiment, Run, arm_col, col, mean_of, option, shared
from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection
from benchmarks.report import percentile
from benchmarks.servers import process_cpu_seconds, server_process, workdir

ANSWERS = 8


class Pool:
    """Persistent keep-alive connections (RawHTTPConnection: far cheaper than httpx per request, so the
    load generator does not take the cores the service needs); one request per connection at a time."""

    def __init__(self, url: str, size: int) -> None:
        parts = urlsplit(url)
        self._idle: asyncio.Queue[RawHTTPConnection] = asyncio.Queue()
        for _ in range(size):
            self._idle.put_nowait(RawHTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80))

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, float]:
        """(status, Retry-After seconds or 0) of one POST, 429 not retried here. A connection the server
        closed while idle (its keep-alive timeout) is opened again once."""
        connection = await self._idle.get()
        payload = connection.request_bytes(path, json.dumps(body).encode())
        try:
            for attempt in range(2):
                try:
                    status, _ = await connection.send(payload)
                    break
                except (OSError, asyncio.IncompleteReadError):
                    await connection.close()
                    if attempt:
                        return 0, 0.0
        finally:
            self._idle.put_nowait(connection)
        return status, 1.0 if status == 429 else 0.0

    async def close(self) -> None:
        while not self._idle.empty():
            await self._idle.get_nowait().close()


async def phase(
    pool: Pool, bodies: list[dict[str, Any]], mode: str, rate: float, seconds: float, pid: int
) -> dict[str, float]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    retried = [0]

    async def timed(path: str, body: dict[str, Any]) -> None:
        started = time.perf_counter()
        for _ in range(5):  # 429 is retried after Retry-After, as the service's clients do
            status, wait = await pool.post(path, body)
            if status != 429:
                break
            retried[0] += 1
            await asyncio.sleep(wait)
        latencies.append(time.perf_counter() - started)
        statuses[status] = statuses.get(status, 0) + 1

    async def one_group(i: int, body: dict[str, Any]) -> None:
        if mode == "group":
            await timed("/v1/judge", body)
            return
        key = f"{mode}-{time.time_ns()}-{i}"
        members = [
            {
                "group_key": key,
                "group_size": len(body["answers"]),
                "answer": answer,
                "conversation": body["conversation"],
                "reference": body["reference"],
                "run_id": "bench-members",
            }
            for answer in body["answers"]
        ]
        await asyncio.gather(*(timed("/v1/judge/member", m) for m in members))

    cpu0, wall0 = process_cpu_seconds(pid), time.perf_counter()
    tasks = []
    i = 0
    while time.perf_counter() - wall0 < seconds:
        tasks.append(asyncio.create_task(one_group(i, bodies[i % len(bodies)])))
        i += 1
        await asyncio.sleep(max(0.0, wall0 + i / rate - time.perf_counter()))
    await asyncio.gather(*tasks)
    wall, cpu = time.perf_counter() - wall0, process_cpu_seconds(pid) - cpu0
    return {
        "groups_per_s": i / wall,
        "requests_per_s": len(latencies) / wall,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "server_cpu_ms_per_group": cpu * 1000 / i,
        "non_200": float(sum(n for s, n in statuses.items() if s != 200)),
        "retried_429": float(retried[0]),
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[tuple[Pool, list[dict[str, Any]], int]]:
    """The service as a child process on the fake judge (JUDGE_FAKE_LATENCY_S per call) and a pool of
    keep-alive connections to it, warmed up; yields the pool, the groups and the server's pid."""
    args = run.args
    bodies = [
        {k: b[k] for k in ("conversation", "reference", "answers")} for b in make_groups(64, ANSWERS, seed=5)
    ]
    with workdir("members") as tmp:
        env = {
            "JUDGE_BACKEND": "fake",
            "JUDGE_HOME_DIR": str(tmp),
            "JUDGE_FAKE_LATENCY_S": str(args.judge_latency_s),
        }
        with server_process(env, tmp / "server.log") as (url, process):
            pool = Pool(url, args.connections)
            try:
                await phase(pool, bodies, "group", args.groups_per_s, 1.0, process.pid)
                yield pool, bodies, process.pid
            finally:
                await pool.close()


def report(run: Run) -> None:
    group, member = run.cell("group"), run.cell("member")
    overhead = (member["server_cpu_ms_per_group"] - group["server_cpu_ms_per_group"]) / ANSWERS
    wait = member["p50_ms"] - group["p50_ms"]
    run.result |= {
        "results": {
            mode: [e for e in run.entries["entries"] if e["arm"] == mode] for mode in ("group", "member")
        },
        "overhead_ms_per_member": overhead,
        "extra_wait_ms_p50": wait,
    }
    run.notes.append(
        f"assembly overhead per member: {overhead:.3f} ms of server CPU; "
        f"wait beyond the group's judge time (p50): {wait:.1f} ms"
    )


EXPERIMENT = Experiment(
    description="Group assembly's cost: each group as one POST /v1/judge vs as 8 POST /v1/judge/member "
    "requests (server CPU per group, added wait).",
    options=[
        option("--groups-per-s", 125.0, "offered groups/s (x8 members/s)"),
        *shared(seconds=5.0, rounds=2, connections=256),
        option("--judge-latency-s", 0.05, "the fake judge's seconds per call"),
    ],
    arms=("group", "member"),
    rounds="rounds",
    order="fixed",
    measure=lambda run, mode, _: phase(
        run.state[0], run.state[1], mode, run.args.groups_per_s, run.args.seconds, run.state[2]
    ),
    progress=lambda e: f"{e['groups_per_s']:.1f} groups/s, p50 {e['p50_ms']:.1f} ms",
    combine=mean_of,
    columns=[
        arm_col("mode"),
        col("groups/s", "groups_per_s"),
        col("requests/s", "requests_per_s"),
        col("p50 ms", "p50_ms"),
        col("p99 ms", "p99_ms"),
        col("server CPU ms/group", "server_cpu_ms_per_group"),
        col("non-200", "non_200"),
        col("429 retried", "retried_429"),
    ],
)

EXPERIMENT.run_if_main(__name__)
