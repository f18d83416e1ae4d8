"""Fair shares between API keys: does a steady trainer keep its throughput while another key floods?

    .venv/bin/python -m benchmarks.fair_shares [--seconds 8] [--rounds 2]

One real server (`python -m judge_service serve`, JUDGE_BACKEND=fake with a fixed judge latency, so the
judge's capacity is known: max_groups_in_flight / latency groups per second, plus a bounded queue) and two
keys from a keys file. The steady key runs a few closed-loop connections; the flooding key runs many and
retries a 429 either at once (a caller that ignores Retry-After, the worst case: the server spends its
CPU refusing) or after Retry-After (as the service's client and adapters do). Phases, interleaved over
`--rounds` rounds: the steady key alone; both keys without per-key limits; both with
JUDGE_KEY_MAX_GROUPS_IN_FLIGHT set so that no key can hold every admission slot. Reported: each key's
judged groups per second and share of 429s; the steady key's throughput as a ratio of its throughput alone.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection
from benchmarks.report import log, markdown_table, ratio, write_result
from benchmarks.servers import server_process, workdir

NAME = "fair_shares"
STEADY_KEY, FLOOD_KEY = "steady-trainer-key-0001", "flooding-trainer-key-0002"


async def _loop(
    host: str, port: int, payloads: list[bytes], connections: int, deadline: float, honour: bool = False
) -> dict[int, int]:
    """Closed-loop connections until the deadline; with `honour`, a 429 is retried after its Retry-After
    (as the service's client and adapters do), else at once."""
    statuses: Counter[int] = Counter()

    async def worker(index: int) -> None:
        connection = RawHTTPConnection(host, port)
        await connection.connect()
        i = index
        try:
            while time.perf_counter() < deadline:
                status, _ = await connection.send(payloads[i % len(payloads)])
                statuses[status] += 1
                i += connections
                if honour and status == 429:
                    await asyncio.sleep(min(1.0, max(0.0, deadline - time.perf_counter())))
        finally:
            await connection.close()

    await asyncio.gather(*(worker(i) for i in range(connections)))
    return dict(statuses)


async def _phase(
    host: str,
    port: int,
    steady: list[bytes],
    flood: list[bytes] | None,
    args: argparse.Namespace,
    honour: bool = False,
) -> dict[str, Any]:
    started = time.perf_counter()
    deadline = started + args.seconds
    runs = [_loop(host, port, steady, args.steady_connections, deadline, honour=True)]
    if flood is not None:
        runs.append(_loop(host, port, flood, args.flood_connections, deadline, honour=honour))
    results = await asyncio.gather(*runs)
    wall = time.perf_counter() - started
    out: dict[str, Any] = {}
    for name, statuses in zip(("steady", "flood"), results, strict=False):
        total = sum(statuses.values())
        out[name] = {
            "groups_per_s": statuses.get(200, 0) / wall,
            "refused_share": statuses.get(429, 0) / total if total else 0.0,
            "statuses": statuses,
        }
    return out


async def _run_server(
    args: argparse.Namespace, tmp: Path, keys_file: Path, limit: int | None
) -> list[dict[str, Any]]:
    limited = limit is not None
    env = {
        "JUDGE_BACKEND": "fake",
        "JUDGE_FAKE_LATENCY_S": str(args.latency),
        "JUDGE_MAX_GROUPS_IN_FLIGHT": str(args.in_flight),
        "JUDGE_MAX_GROUPS_QUEUED": str(args.queued),
        "JUDGE_API_KEYS_FILE": str(keys_file),
        "JUDGE_HOME_DIR": str(tmp),
        "JUDGE_DB_PATH": str(tmp / f"judgements-{limit}.sqlite3"),
    }
    if limited:
        env["JUDGE_KEY_MAX_GROUPS_IN_FLIGHT"] = str(limit)
    bodies = make_groups(32, args.answers, seed=7, run_id="fair-shares")
    phases = []
    with server_process(env, tmp / f"server-{limit}.log") as (base_url, _):
        host, port = "127.0.0.1", int(base_url.rsplit(":", 1)[1])
        conn = RawHTTPConnection(host, port)

        def payloads(key: str) -> list[bytes]:
            headers = {"Authorization": f"Bearer {key}"}
            return [conn.request_bytes("/v1/judge", json.dumps(b).encode(), headers) for b in bodies]

        steady, flood = payloads(STEADY_KEY), payloads(FLOOD_KEY)
        await _phase(host, port, steady, None, argparse.Namespace(**{**vars(args), "seconds": 1.0}))  # warm
        for _ in range(args.rounds):
            if not limited:
                phases.append({"phase": "steady alone", **await _phase(host, port, steady, None, args)})
            for honour in (False, True):
                name = (f"per-key limit {limit}" if limited else "no per-key limit") + (
                    ", flood honours Retry-After" if honour else ", flood retries at once"
                )
                phases.append({"phase": name, **await _phase(host, port, steady, flood, args, honour)})
                log(f"{name}: steady {phases[-1]['steady']['groups_per_s']:.1f} groups/s")
    return phases


async def main_async(args: argparse.Namespace) -> None:
    with workdir(NAME) as tmp:
        keys_file = tmp / "keys.json"
        entries = [
            {"name": name, "sha256": hashlib.sha256(key.encode()).hexdigest(), "scopes": ["judge"]}
            for name, key in (("steady", STEADY_KEY), ("flood", FLOOD_KEY))
        ]
        keys_file.write_text(json.dumps({"keys": entries}))
        phases = await _run_server(args, tmp, keys_file, None)
        for limit in args.key_in_flight:
            phases += await _run_server(args, tmp, keys_file, limit)
    alone = [p["steady"]["groups_per_s"] for p in phases if p["phase"] == "steady alone"]
    baseline = sum(alone) / len(alone)
    rows = []
    names = [p["phase"] for p in phases]
    for name in sorted(set(names), key=names.index):
        picked = [p for p in phases if p["phase"] == name]
        steady = sum(p["steady"]["groups_per_s"] for p in picked) / len(picked)
        refused = sum(p["steady"]["refused_share"] for p in picked) / len(picked)
        flood = [p["flood"] for p in picked if "flood" in p]
        rows.append(
            [
                name,
                steady,
                ratio(steady, baseline),
                refused,
                sum(f["groups_per_s"] for f in flood) / len(flood) if flood else None,
                sum(f["refused_share"] for f in flood) / len(flood) if flood else None,
            ]
        )
    headers = [
        "phase",
        "steady groups/s",
        "steady vs alone",
        "steady 429 share",
        "flood groups/s",
        "flood 429 share",
    ]
    capacity = args.in_flight / args.latency
    note = (
        f"\n\nfake judge: {args.latency} s per group, {args.in_flight} in flight, {args.queued} queued "
        f"(capacity {capacity:.0f} groups/s); steady {args.steady_connections} connections, flood "
        f"{args.flood_connections}. Per-key limit: JUDGE_KEY_MAX_GROUPS_IN_FLIGHT. The fake judge's fixed "
        "latency makes groups finish in waves, so a group that finds every slot taken waits on average half "
        "a group's time for the next: the steady key's cost when the flood may fill the judge"
    )
    write_result(NAME, {"args": vars(args), "phases": phases}, markdown_table(headers, rows) + note)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.2, help="fake judge seconds per group")
    parser.add_argument("--in-flight", type=int, default=8, help="JUDGE_MAX_GROUPS_IN_FLIGHT")
    parser.add_argument("--queued", type=int, default=8, help="JUDGE_MAX_GROUPS_QUEUED")
    parser.add_argument(
        "--key-in-flight",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[12, 6],
        help="JUDGE_KEY_MAX_GROUPS_IN_FLIGHT values to run, comma-separated (default 12,6: above and below "
        "the judge's 8 slots)",
    )
    parser.add_argument("--steady-connections", type=int, default=2)
    parser.add_argument("--flood-connections", type=int, default=32)
    parser.add_argument("--answers", type=int, default=4)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
