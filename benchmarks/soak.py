"""Soak: a fleet under steady load for minutes, and the resident memory of every one of its processes.

Two replicas on one PostgreSQL database (the second with JUDGE_WORKERS=2: a supervisor and two workers),
fake judge. The load is open loop at `--rate` requests/s, spread over both replicas: groups with an
Idempotency-Key each (1 in 10 is a retry of an earlier key, answered from the store), and 1 in 5 a member
of a 4-member group whose members go to different replicas. Every `--sample-s` seconds the RSS of every
server process is read from /proc. Growth is from the end of the warm-up (`--warmup-s`) to the end.

    .venv/bin/python -m benchmarks soak [--minutes 10] [--rate 40]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection
from benchmarks.report import log, markdown_table
from benchmarks.servers import fresh_database, server_pids, server_process, workdir

NAME = "soak"


def rss_mib(pid: int) -> float | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def keyed_request(port: int, path: str, body: dict[str, Any], key: str | None) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    if key is not None:
        head += f"Idempotency-Key: {key}\r\n"
    data = json.dumps(body).encode()
    return (head + f"Content-Length: {len(data)}\r\n\r\n").encode() + data


async def load(ports: list[int], rate: float, seconds: float, statuses: Counter[int]) -> None:
    """Open loop: a request every 1/rate s on a pool of connections, whatever the answers take."""
    bodies = make_groups(256, 4, seed=11, run_id="soak")
    pools = {port: [RawHTTPConnection("127.0.0.1", port) for _ in range(16)] for port in ports}
    free: dict[int, asyncio.Queue[RawHTTPConnection]] = {port: asyncio.Queue() for port in ports}
    for port, conns in pools.items():
        for conn in conns:
            free[port].put_nowait(conn)
    rng = random.Random(5)
    tasks: set[asyncio.Task[None]] = set()

    async def send(port: int, payload: bytes) -> None:
        conn = await free[port].get()
        try:
            status, _ = await conn.send(payload)
            statuses[status] += 1
        except (OSError, asyncio.IncompleteReadError):
            statuses[0] += 1
            await conn.close()
        finally:
            free[port].put_nowait(conn)

    started = time.monotonic()
    i = 0
    member_group = 0
    while (elapsed := time.monotonic() - started) < seconds:
        kind = rng.random()
        if kind < 0.2:  # a group of four members, spread over the replicas
            body = bodies[member_group % len(bodies)]
            for a, answer in enumerate(body["answers"]):
                member = {k: v for k, v in body.items() if k != "answers"}
                member |= {
                    "group_key": f"m-{member_group}",
                    "group_size": 4,
                    "answer": answer,
                    "deadline_s": 30,
                }
                port = ports[a % len(ports)]
                task = asyncio.create_task(send(port, keyed_request(port, "/v1/judge/member", member, None)))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            member_group += 1
        else:
            retry = kind < 0.3 and i > 0  # 1 in 10: a retry of an earlier key, through the other replica
            n = rng.randrange(i) if retry else i
            port = ports[(n + retry) % len(ports)]
            task = asyncio.create_task(
                send(port, keyed_request(port, "/v1/judge", bodies[n % 256], f"soak-{n}"))
            )
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
        await asyncio.sleep(max(0.0, (i + member_group) / rate - elapsed))
    await asyncio.gather(*tasks, return_exceptions=True)
    for conns in pools.values():
        for conn in conns:
            await conn.close()


async def run(args: argparse.Namespace) -> Outcome:
    seconds = args.minutes * 60
    samples: list[dict[str, Any]] = []
    statuses: Counter[int] = Counter()
    with workdir("soak-") as tmp, fresh_database() as url, contextlib.ExitStack() as stack:
        base = {"JUDGE_BACKEND": "fake", "JUDGE_DATABASE_URL": url, "JUDGE_MIGRATE_ON_START": "true",
                "JUDGE_ACCESS_LOG": "false", "JUDGE_FAKE_LATENCY_S": "0.05"}  # fmt: skip
        servers = [
            stack.enter_context(server_process({**base, "JUDGE_HOME_DIR": str(tmp / "a")}, tmp / "a.log")),
            stack.enter_context(
                server_process(
                    {**base, "JUDGE_HOME_DIR": str(tmp / "b"), "JUDGE_WORKERS": "2"}, tmp / "b.log"
                )
            ),
        ]
        ports = [int(urlsplit(u).port or 0) for u, _ in servers]
        pids = {
            f"{name}:{pid}": pid
            for (_, p), name in zip(servers, "ab", strict=True)
            for pid in server_pids(p.pid)
        }
        log(f"processes: {sorted(pids)}; {args.minutes} min at {args.rate}/s")
        driving = asyncio.create_task(load(ports, args.rate, seconds, statuses))
        started = time.monotonic()
        while not driving.done():
            samples.append(
                {"t_s": round(time.monotonic() - started), **{n: rss_mib(p) for n, p in pids.items()}}
            )
            log(f"{samples[-1]['t_s']} s: answers by status {dict(sorted(statuses.items()))}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(driving), timeout=args.sample_s)
        await driving
        samples.append({"t_s": round(time.monotonic() - started), **{n: rss_mib(p) for n, p in pids.items()}})
    after_warmup = next(s for s in samples if s["t_s"] >= args.warmup_s)
    last = samples[-1]
    rows = []
    for name in pids:
        start, end = after_warmup[name], last[name]
        peak = max(s[name] for s in samples if s[name] is not None)
        growth = f"{(end - start) / start * 100:+.1f}%"
        rows.append([name, f"{start:.1f}", f"{end:.1f}", f"{end - start:+.1f}", growth, f"{peak:.1f}"])
    table = markdown_table(
        ["process", f"RSS MiB at {args.warmup_s:.0f} s", f"RSS MiB at {last['t_s']} s", "growth MiB",
         "growth", "peak MiB"],
        rows,
    )  # fmt: skip
    table += f"\n\nrequests by status: {dict(sorted(statuses.items()))}"
    return Outcome({"statuses": dict(statuses), "samples": samples}, table)


EXPERIMENT = Experiment(
    options=[
        option("--minutes", 10.0),
        option("--rate", 40.0, "requests per second, open loop"),
        option("--sample-s", 10.0),
        option("--warmup-s", 60.0),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
