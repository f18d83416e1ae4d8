"""Group assembly's cost, side by side in one run against a service process (fake judge that takes
JUDGE_FAKE_LATENCY_S per call, so a judge time exists to wait beyond):

- group mode: each group of 8 answers as one POST /v1/judge, at `--groups-per-s`;
- member mode: the same groups as 8 POST /v1/judge/member requests each, sent together (8 x the rate in
  members/s). The load goes over persistent raw HTTP/1.1 connections (benchmarks/common.py), so it costs
  the cores far less than the service does.

Reported per mode (alternating phases): groups/s and members/s achieved, request latency p50/p99, and the
server's CPU per group; then the assembly overhead per member (the CPU difference over 8) and the wait a
member adds beyond its group's judge time (member p50 minus group p50).

    .venv/bin/python -m benchmarks.member_assembly [--groups-per-s 125] [--seconds 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any
from urllib.parse import urlsplit

from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection
from benchmarks.report import log, markdown_table, percentile, write_result
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


async def run(args: argparse.Namespace, url: str, pid: int) -> dict[str, list[dict[str, float]]]:
    bodies = [
        {k: b[k] for k in ("conversation", "reference", "answers")} for b in make_groups(64, ANSWERS, seed=5)
    ]
    results: dict[str, list[dict[str, float]]] = {"group": [], "member": []}
    pool = Pool(url, args.connections)
    try:
        await phase(pool, bodies, "group", args.groups_per_s, 1.0, pid)  # warm-up
        for r in range(args.rounds):
            for mode in ("group", "member"):
                log(f"round {r + 1}: {mode} mode")
                results[mode].append(await phase(pool, bodies, mode, args.groups_per_s, args.seconds, pid))
    finally:
        await pool.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups-per-s", type=float, default=125.0, help="offered groups/s (x8 members/s)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--judge-latency-s", type=float, default=0.05)
    parser.add_argument("--connections", type=int, default=256, help="keep-alive connections of the load")
    args = parser.parse_args()
    with workdir("members") as tmp:
        env = {
            "JUDGE_BACKEND": "fake",
            "JUDGE_HOME_DIR": str(tmp),
            "JUDGE_FAKE_LATENCY_S": str(args.judge_latency_s),
        }
        with server_process(env, tmp / "server.log") as (url, process):
            results = asyncio.run(run(args, url, process.pid))

    def mean(mode: str, key: str) -> float:
        return statistics.fmean(r[key] for r in results[mode])

    overhead = (
        mean("member", "server_cpu_ms_per_group") - mean("group", "server_cpu_ms_per_group")
    ) / ANSWERS
    wait = mean("member", "p50_ms") - mean("group", "p50_ms")
    rows = [
        [
            mode,
            mean(mode, "groups_per_s"),
            mean(mode, "requests_per_s"),
            mean(mode, "p50_ms"),
            mean(mode, "p99_ms"),
            mean(mode, "server_cpu_ms_per_group"),
            mean(mode, "non_200"),
        ]
        for mode in ("group", "member")
    ]
    table = markdown_table(
        [
            "mode",
            "groups/s",
            "requests/s",
            "p50 ms",
            "p99 ms",
            "server CPU ms/group",
            "non-200",
            "429 retried",
        ],
        rows,
    )
    table += (
        f"\n\nassembly overhead per member: {overhead:.3f} ms of server CPU; "
        f"wait beyond the group's judge time (p50): {wait:.1f} ms"
    )
    write_result(
        "member_assembly",
        {
            "results": results,
            "overhead_ms_per_member": overhead,
            "extra_wait_ms_p50": wait,
            "args": vars(args),
        },
        table,
    )


if __name__ == "__main__":
    main()
