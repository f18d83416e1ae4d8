"""Group assembly's cost, side by side in one run against a service process (fake judge that takes
JUDGE_FAKE_LATENCY_S per call, so a judge time exists to wait beyond):

- group mode: each group of 8 answers as one POST /v1/judge, at `--groups-per-s`;
- member mode: the same groups as 8 POST /v1/judge/member requests each, sent together (8 x the rate in
  members/s).

Reported per mode (alternating phases): groups/s and members/s achieved, request latency p50/p99, and the
server's CPU per group; then the assembly overhead per member (the CPU difference over 8) and the wait a
member adds beyond its group's judge time (member p50 minus group p50).

    .venv/bin/python -m benchmarks.member_assembly [--groups-per-s 125] [--seconds 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import httpx

from benchmarks.common import (
    log,
    make_groups,
    markdown_table,
    percentile,
    process_cpu_seconds,
    server_process,
    wait_ready,
    workdir,
    write_result,
)

ANSWERS = 8


async def phase(
    url: str, bodies: list[dict[str, Any]], mode: str, rate: float, seconds: float, pid: int
) -> dict[str, float]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    retried = [0]
    limits = httpx.Limits(max_connections=2000, max_keepalive_connections=2000)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def timed(path: str, body: dict[str, Any]) -> None:
            started = time.perf_counter()
            for _ in range(5):  # 429 is retried after Retry-After, as the service's clients do
                try:
                    reply = await client.post(path, json=body)
                except httpx.TransportError:  # counted, not fatal: an overloaded run says so in non-200
                    status = 0
                    break
                status = reply.status_code
                if status != 429:
                    break
                retried[0] += 1
                await asyncio.sleep(float(reply.headers.get("retry-after", "1")))
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1

        async def one_group(i: int, body: dict[str, Any]) -> None:
            if mode == "group":
                await timed("/v1/judge", body)
                return
            members = [
                {
                    "group_key": f"{mode}-{time.time_ns()}-{i}",
                    "group_size": len(body["answers"]),
                    "answer": answer,
                    "conversation": body["conversation"],
                    "reference": body["reference"],
                    "run_id": "bench-members",
                }
                for answer in body["answers"]
            ]
            key = members[0]["group_key"]
            await asyncio.gather(*(timed("/v1/judge/member", {**m, "group_key": key}) for m in members))

        cpu0, wall0 = process_cpu_seconds(pid), time.perf_counter()
        tasks = []
        i = 0
        while time.perf_counter() - wall0 < seconds:
            tasks.append(asyncio.create_task(one_group(i, bodies[i % len(bodies)])))
            i += 1
            await asyncio.sleep(max(0.0, wall0 + i / rate - time.perf_counter()))
        await asyncio.gather(*tasks)
        wall, cpu = time.perf_counter() - wall0, process_cpu_seconds(pid) - cpu0
    requests = len(latencies)
    return {
        "groups_per_s": i / wall,
        "requests_per_s": requests / wall,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "server_cpu_ms_per_group": cpu * 1000 / i,
        "non_200": float(sum(n for s, n in statuses.items() if s != 200)),
        "retried_429": float(retried[0]),
        **{f"status_{k}": float(v) for k, v in statuses.items()},
    }


async def run(args: argparse.Namespace, url: str, pid: int) -> dict[str, list[dict[str, float]]]:
    bodies = [
        {k: b[k] for k in ("conversation", "reference", "answers")} for b in make_groups(64, ANSWERS, seed=5)
    ]
    results: dict[str, list[dict[str, float]]] = {"group": [], "member": []}
    await phase(url, bodies, "group", args.groups_per_s, 1.0, pid)  # warm-up
    for r in range(args.rounds):
        for mode in ("group", "member"):
            log(f"round {r + 1}: {mode} mode")
            results[mode].append(await phase(url, bodies, mode, args.groups_per_s, args.seconds, pid))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups-per-s", type=float, default=125.0, help="offered groups/s (x8 members/s)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--judge-latency-s", type=float, default=0.05)
    args = parser.parse_args()
    with workdir("members") as tmp:
        env = {
            "JUDGE_BACKEND": "fake",
            "JUDGE_HOME_DIR": str(tmp),
            "JUDGE_FAKE_LATENCY_S": str(args.judge_latency_s),
        }
        with server_process(env, tmp / "server.log") as (url, process):
            asyncio.run(wait_ready(url, 60, process))
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
