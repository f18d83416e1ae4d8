"""Fair shares between API keys: does a steady trainer keep its throughput while another key floods?

    .venv/bin/python -m benchmarks fair_shares [--seconds 8] [--rounds 2]

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

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.experiment import Column, Experiment, Run, col, ints, mean_of, option, shared
from benchmarks.groups import make_groups
from benchmarks.rawhttp import RawHTTPConnection, closed_loop
from benchmarks.report import ratio
from benchmarks.servers import server_process, workdir

NAME = "fair_shares"
STEADY_KEY, FLOOD_KEY = "steady-trainer-key-0001", "flooding-trainer-key-0002"
PHASES = ("steady alone", "flood retries at once", "flood honours Retry-After")


def honouring(deadline: float) -> Callable[[int], Awaitable[None]]:
    """A client that honours Retry-After (as the service's client and adapters do): a 429 is retried
    after a second (or at the end of the phase)."""

    async def after(status: int) -> None:
        if status == 429:
            await asyncio.sleep(min(1.0, max(0.0, deadline - time.perf_counter())))

    return after


async def load_phase(
    target: tuple[str, int],
    steady: list[bytes],
    flood: list[bytes] | None,
    args: Any,
    seconds: float,
    honour: bool = False,
) -> dict[str, Any]:
    """The steady key's connections (honouring Retry-After), and the flooding key's when given, until the
    phase ends; each key's judged groups/s and share of 429s."""
    started = time.perf_counter()
    deadline = started + seconds
    runs = [closed_loop([target], steady, args.steady_connections, deadline, honouring(deadline))]
    if flood is not None:
        flooding = honouring(deadline) if honour else None
        runs.append(closed_loop([target], flood, args.flood_connections, deadline, flooding))
    results = await asyncio.gather(*runs)
    wall = time.perf_counter() - started
    out: dict[str, Any] = {}
    for name, result in zip(("steady", "flood"), results, strict=False):
        total = sum(result.statuses.values())
        out[name] = {
            "groups_per_s": result.statuses.get(200, 0) / wall,
            "refused_share": result.statuses.get(429, 0) / total if total else 0.0,
            "statuses": dict(result.statuses),
        }
    return out


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[tuple[Path, Path]]:
    """A folder and a keys file naming the two keys."""
    with workdir(NAME) as tmp:
        keys_file = tmp / "keys.json"
        entries = [
            {"name": name, "sha256": hashlib.sha256(key.encode()).hexdigest(), "scopes": ["judge"]}
            for name, key in (("steady", STEADY_KEY), ("flood", FLOOD_KEY))
        ]
        keys_file.write_text(json.dumps({"keys": entries}))
        yield tmp, keys_file


@contextlib.asynccontextmanager
async def server(run: Run, limit: int | None) -> AsyncIterator[dict[str, Any]]:
    """The real server for one per-key limit (None: without), the two keys' prepared requests, and a
    second of load to warm it up."""
    args, (tmp, keys_file) = run.args, run.state
    env = {
        "JUDGE_BACKEND": "fake",
        "JUDGE_FAKE_LATENCY_S": str(args.latency),
        "JUDGE_MAX_GROUPS_IN_FLIGHT": str(args.in_flight),
        "JUDGE_MAX_GROUPS_QUEUED": str(args.queued),
        "JUDGE_API_KEYS_FILE": str(keys_file),
        "JUDGE_HOME_DIR": str(tmp),
        "JUDGE_DB_PATH": str(tmp / f"judgements-{limit}.sqlite3"),
    }
    if limit is not None:
        env["JUDGE_KEY_MAX_GROUPS_IN_FLIGHT"] = str(limit)
    bodies = make_groups(32, args.answers, seed=7, run_id="fair-shares")
    with server_process(env, tmp / f"server-{limit}.log") as (base_url, _):
        target = ("127.0.0.1", int(base_url.rsplit(":", 1)[1]))
        conn = RawHTTPConnection(*target)

        def payloads(key: str) -> list[bytes]:
            headers = {"Authorization": f"Bearer {key}"}
            return [conn.request_bytes("/v1/judge", json.dumps(b).encode(), headers) for b in bodies]

        found: dict[str, Any] = {
            "target": target,
            "steady": payloads(STEADY_KEY),
            "flood": payloads(FLOOD_KEY),
        }
        await load_phase(target, found["steady"], None, args, 1.0)
        yield found


async def measure(run: Run, phase: str, limit: int | None) -> dict[str, Any] | None:
    if phase == "steady alone" and limit is not None:
        return None  # the steady key alone is measured once, on the server without a per-key limit
    at = run.level_state
    flood = None if phase == "steady alone" else at["flood"]
    return await load_phase(at["target"], at["steady"], flood, run.args, run.args.seconds, "honours" in phase)


def phase_name(cell: Any) -> str:
    if cell.arm == "steady alone":
        return cell.arm
    limit = "no per-key limit" if cell.level is None else f"per-key limit {cell.level}"
    return f"{limit}, {cell.arm}"


def combine(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Each key's figures, the mean over rounds."""
    return {side: mean_of([e[side] for e in entries]) for side in ("steady", "flood") if side in entries[0]}


def steady_vs_alone(cell: Any) -> float:
    alone = cell.at(PHASES[0], None)
    return ratio(cell["steady.groups_per_s"], alone["steady.groups_per_s"])


def report(run: Run) -> None:
    args = run.args
    capacity = args.in_flight / args.latency
    run.notes.append(
        f"fake judge: {args.latency} s per group, {args.in_flight} in flight, {args.queued} queued "
        f"(capacity {capacity:.0f} groups/s); steady {args.steady_connections} connections, flood "
        f"{args.flood_connections}. Per-key limit: JUDGE_KEY_MAX_GROUPS_IN_FLIGHT. The fake judge's fixed "
        "latency makes groups finish in waves, so a group that finds every slot taken waits on average half "
        "a group's time for the next: the steady key's cost when the flood may fill the judge"
    )


EXPERIMENT = Experiment(
    options=[
        *shared(seconds=(8.0, "seconds per phase"), rounds=2),
        option("--latency", 0.2, "fake judge seconds per group"),
        option("--in-flight", 8, "JUDGE_MAX_GROUPS_IN_FLIGHT"),
        option("--queued", 8, "JUDGE_MAX_GROUPS_QUEUED"),
        option(
            "--key-in-flight",
            "12,6",
            "JUDGE_KEY_MAX_GROUPS_IN_FLIGHT values to run, comma-separated (default 12,6: above and below "
            "the judge's 8 slots)",
            type=ints,
        ),
        option("--steady-connections", 2, "the steady key's connections"),
        option("--flood-connections", 32, "the flooding key's connections"),
        *shared(answers=4),
    ],
    arms=PHASES,
    levels=lambda run: [None, *run.args.key_in_flight],
    level_label="limit",
    level_setup=server,
    rounds="rounds",
    order="fixed",
    progress=lambda e: f"steady {e['steady']['groups_per_s']:.1f} groups/s",
    combine=combine,
    columns=[
        Column("phase", phase_name),
        col("steady groups/s", "steady.groups_per_s"),
        Column("steady vs alone", steady_vs_alone),
        col("steady 429 share", "steady.refused_share"),
        col("flood groups/s", "flood.groups_per_s"),
        col("flood 429 share", "flood.refused_share"),
    ],
)

EXPERIMENT.run_if_main(__name__)
