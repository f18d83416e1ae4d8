"""What the HTTP service adds on top of the engine: the same groups through the full service and straight
into the same engine instance, in alternating rounds of one process run.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.service_overhead [--groups 16] [--pairs 3]

One vLLM engine is loaded once. The service is the real app (create_app with that engine lent to it)
served by uvicorn on loopback inside this process, driven by an httpx client at --concurrency. The
direct path replays, through VLLMEngineBackend.generate at the same concurrency, the very
GenerationRequests the service sent for these groups (recorded in a first, unmeasured round), so the
prompts, schema and sampling are identical by construction. Rounds alternate direct/service,
service/direct, ... to cancel drift; the prefix cache is emptied before every round, and answer orders
are pinned (the request `seed`), so every round does the same engine work. parse_retries is 0 so one
group is exactly one engine call on both paths.

Reported: groups/s of each path over all its rounds, the ratio service/direct (goal: overhead < 5%), the
per-pair ratios, and per-group latency on each path.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from dataclasses import replace
from typing import Any

from benchmarks.engine import RecordingBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import in_process_server, workdir
from judge_service.backends.base import Generation, GenerationRequest

NAME = "service_overhead"


async def _main(args: argparse.Namespace) -> int:
    import httpx

    groups = make_groups(
        args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME, fixed_order=True
    )
    with workdir(NAME) as tmp:
        settings = bench_settings(tmp, reason_max_chars=args.reason_chars, parse_retries=0)
        engine = await start_engine(settings)
        recorder = RecordingBackend(engine)
        rounds: list[dict[str, Any]] = []
        try:
            async with (
                running_app(settings, recorder) as app,
                in_process_server(app) as base_url,
                httpx.AsyncClient(
                    base_url=base_url,
                    timeout=900,
                    limits=httpx.Limits(max_connections=args.concurrency * 2),
                ) as client,
            ):
                rounds = await _rounds(args, groups, engine, recorder, client)
        except Exception as exc:
            if not rounds:
                raise
            log(f"teardown failed after the measurement (results kept): {type(exc).__name__}: {exc}")
        finally:
            await engine.close()
    return _report(args, rounds)


async def _rounds(
    args: argparse.Namespace,
    groups: list[dict[str, Any]],
    engine: Any,
    recorder: RecordingBackend,
    client: Any,
) -> list[dict[str, Any]]:
    async def via_service(body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post("/v1/judge", json=body)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    async def direct(request: GenerationRequest) -> Generation:
        reply: Generation = await engine.generate(replace(request, request_id=uuid.uuid4().hex))
        return reply

    log(f"recording round: {len(groups)} groups through the service (not measured)")
    recorder.recording = True
    warm = await run_load(groups, via_service, args.concurrency)
    recorder.recording = False
    if warm.errors or len(recorder.requests) != len(groups):
        raise RuntimeError(f"recording round: {len(recorder.requests)} calls, errors {warm.errors[:3]}")
    requests = list(recorder.requests)

    rounds: list[dict[str, Any]] = []
    for pair in range(args.pairs):
        order = ["direct", "service"] if pair % 2 == 0 else ["service", "direct"]
        for path in order:
            await reset_prefix_cache(engine)
            started_cpu = time.process_time()
            if path == "direct":
                load = await run_load(requests, direct, args.concurrency)
                completion = sum(g.completion_tokens for g in load.results)
                prompt = sum(g.prompt_tokens for g in load.results)
                judge_ms: list[float] = []
            else:
                load = await run_load(groups, via_service, args.concurrency)
                completion = sum(r["usage"]["completion_tokens"] for r in load.results)
                prompt = sum(r["usage"]["prompt_tokens"] for r in load.results)
                judge_ms = [r["timings"]["judge_ms"] for r in load.results]
            entry = {
                "pair": pair,
                "path": path,
                "groups": load.ok,
                "errors": load.errors[:3],
                "wall_s": round(load.wall_s, 3),
                "groups_per_s": round(load.per_second(), 4),
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "main_process_cpu_s": round(time.process_time() - started_cpu, 3),
                "latency": latency_summary(load.latencies_s),
                "latencies_s": [round(x, 4) for x in load.latencies_s],
                "service_judge_ms_mean": round(sum(judge_ms) / len(judge_ms), 2) if judge_ms else None,
            }
            rounds.append(entry)
            log(
                f"pair {pair} {path:7s}: {entry['groups_per_s']:.3f} groups/s, wall {entry['wall_s']} s, "
                f"completion tokens {completion}, errors {len(load.errors)}"
            )
    return rounds


def _report(args: argparse.Namespace, rounds: list[dict[str, Any]]) -> int:
    paths: dict[str, dict[str, Any]] = {}
    for path in ("direct", "service"):
        mine = [r for r in rounds if r["path"] == path]
        groups = sum(r["groups"] for r in mine)
        wall = sum(r["wall_s"] for r in mine)
        latencies = [x for r in mine for x in r["latencies_s"]]
        paths[path] = {
            "groups": groups,
            "wall_s": round(wall, 3),
            "groups_per_s": round(groups / wall, 4) if wall else float("nan"),
            "completion_tokens": sum(r["completion_tokens"] for r in mine),
            "prompt_tokens": sum(r["prompt_tokens"] for r in mine),
            "latency": latency_summary(latencies),
            "main_process_cpu_s": round(sum(r["main_process_cpu_s"] for r in mine), 3),
            "errors": sum(len(r["errors"]) for r in mine),
        }
    pair_ratios = []
    for pair in range(args.pairs):
        by_path = {r["path"]: r for r in rounds if r["pair"] == pair}
        pair_ratios.append(ratio(by_path["service"]["groups_per_s"], by_path["direct"]["groups_per_s"]))
    overall = ratio(paths["service"]["groups_per_s"], paths["direct"]["groups_per_s"])
    overhead_pct = round((1 - overall) * 100, 2)
    result = {
        "config": {**vars(args), "parse_retries": 0, "prefix_cache_reset_each_round": True},
        "paths": paths,
        "ratio_service_over_direct": overall,
        "overhead_pct": overhead_pct,
        "pair_ratios": pair_ratios,
        "goal_overhead_pct": 5.0,
        "goal_met": overhead_pct < 5.0,
        "rounds": rounds,
    }
    rows = [
        [
            path,
            p["groups"],
            p["groups_per_s"],
            p["latency"]["p50_ms"],
            p["latency"]["p99_ms"],
            p["completion_tokens"],
            p["errors"],
        ]
        for path, p in paths.items()
    ]
    table = markdown_table(
        ["path", "groups", "groups/s", "p50 ms", "p99 ms", "completion tokens", "errors"], rows
    )
    table += (
        f"\n\nservice / direct = **{overall}** (overhead {overhead_pct}%, goal < 5%); per pair: "
        f"{', '.join(str(r) for r in pair_ratios)}. N={args.answers} answers, {args.criteria} criterion(s), "
        f"reasons <= {args.reason_chars} chars, concurrency {args.concurrency}, "
        f"{args.groups} groups per round."
    )
    write_result(NAME, result, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=16, help="groups per round")
    parser.add_argument(
        "--pairs", type=int, default=3, help="(direct, service) round pairs, order alternating"
    )
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--answers", type=int, default=2, help="answers per group")
    parser.add_argument("--criteria", type=int, default=1, help="first n default criteria (4 = all)")
    parser.add_argument("--reason-chars", type=int, default=16, help="reason_max_chars (>= 16)")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
