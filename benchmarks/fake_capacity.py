"""Capacity of the service itself, without a model: the scripted FakeBackend behind the full path.

    .venv/bin/python -m benchmarks.fake_capacity [--seconds 5] [--levels 1,8,32,128] [--profile]

The server is the real `python -m judge_service serve` in a subprocess (JUDGE_BACKEND=fake, SQLite in a
temporary folder), so every group pays HTTP parsing, request validation, prompt rendering, the output
schema, the fake reply, parsing, the durable SQLite write, metrics and response serialization. This
process is the load generator: closed-loop workers on keep-alive loopback connections with a lean raw
HTTP/1.1 client and pre-encoded bodies (N=8 answers, the default four criteria), so the client costs
much less CPU than the server. Reported per concurrency level: groups/s, latency percentiles, and the
server's own CPU time per group (from /proc), which gives the capacity of one fully used core
independently of the load generator sharing the machine.

A second part runs the same path in this process without HTTP (JudgeService.grade on the app's own
objects) and times each stage separately, to show where a group's CPU time goes. With --profile,
py-spy (pass --py-spy PATH or have it on PATH) samples the server per thread at the highest level; the
event-loop thread's top functions go into the result, with a cProfile run of in-process grades as a
cross-check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import OUT_DIR
from benchmarks.engine import bench_settings, running_app
from benchmarks.experiment import Experiment, Outcome, ints, option, shared
from benchmarks.groups import make_groups
from benchmarks.profile_stages import stage_shares, threads
from benchmarks.profile_stages import table as stage_table
from benchmarks.rawhttp import RawHTTPConnection, closed_loop
from benchmarks.report import latency_summary, log, markdown_table, ratio
from benchmarks.servers import process_cpu_seconds, server_process, tail, workdir

NAME = "fake_capacity"
BATCH_PATH = "/v1/judge/batch"


async def _drive(
    host: str,
    port: int,
    path: str,
    payloads: list[bytes],
    concurrency: int,
    seconds: float,
    groups_per_request: int = 1,
) -> dict[str, Any]:
    """Closed loop: `concurrency` connections, each sending its next request when the last returns,
    for `seconds` of wall time. Returns counts, latencies and the status codes seen."""
    run = await closed_loop([(host, port)], payloads, concurrency, time.perf_counter() + seconds)
    return {
        "wall_s": run.wall_s,
        "requests": len(run.latencies),
        "groups": len(run.latencies) * groups_per_request,
        "latencies": run.latencies,
        "statuses": dict(run.statuses),
        "errors": run.errors[:5],
        "sample": run.sample,
    }


def _payloads(
    conn: RawHTTPConnection, path: str, bodies: list[dict[str, Any]], per_request: int
) -> list[bytes]:
    if per_request == 1:
        return [conn.request_bytes(path, json.dumps(b).encode()) for b in bodies]
    chunks = [bodies[i : i + per_request] for i in range(0, len(bodies) - per_request + 1, per_request)]
    return [conn.request_bytes(path, json.dumps({"groups": chunk}).encode()) for chunk in chunks]


async def _has_route(base_url: str, path: str) -> bool:
    import httpx

    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        spec = (await client.get("/openapi.json")).json()
    return path in spec.get("paths", {})


async def _http_levels(args: argparse.Namespace, tmp: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    bodies = make_groups(args.distinct_groups, args.answers, seed=args.seed, run_id="fake-capacity")
    env = {
        "JUDGE_BACKEND": "fake",
        "JUDGE_HOME_DIR": str(tmp),
        "JUDGE_DB_PATH": str(tmp / "judgements.sqlite3"),
    }
    log_path = tmp / "server.log"
    levels: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    with server_process(env, log_path) as (base_url, process):
        host, port = "127.0.0.1", int(base_url.rsplit(":", 1)[1])
        conn = RawHTTPConnection(host, port)
        single = _payloads(conn, "/v1/judge", bodies, 1)
        log(f"server pid {process.pid} ready at {base_url}; warming up")
        await _drive(host, port, "/v1/judge", single, 8, args.warmup)
        plan: list[tuple[str, str, list[bytes], int, int]] = [
            ("POST /v1/judge", "/v1/judge", single, c, 1) for c in args.levels
        ]
        batch = await _has_route(base_url, BATCH_PATH)
        extra["batch_endpoint_present"] = batch
        if batch:
            batched = _payloads(conn, BATCH_PATH, bodies, args.batch_size)
            plan += [
                (f"POST {BATCH_PATH} x{args.batch_size}", BATCH_PATH, batched, c, args.batch_size)
                for c in args.batch_levels
            ]
        for label, path, payloads, concurrency, per_request in plan:
            cpu_before = process_cpu_seconds(process.pid)
            client_before = time.process_time()
            run = await _drive(host, port, path, payloads, concurrency, args.seconds, per_request)
            server_cpu = process_cpu_seconds(process.pid) - cpu_before
            client_cpu = time.process_time() - client_before
            groups = run["groups"]
            level = {
                "endpoint": label,
                "concurrency": concurrency,
                "groups_per_request": per_request,
                "groups": groups,
                "wall_s": round(run["wall_s"], 3),
                "groups_per_s": round(groups / run["wall_s"], 1),
                "latency_per_request": latency_summary(run["latencies"]),
                "server_cpu_ms_per_group": round(server_cpu * 1000 / groups, 3) if groups else None,
                "server_cpu_util": round(server_cpu / run["wall_s"], 3),
                "client_cpu_ms_per_group": round(client_cpu * 1000 / groups, 3) if groups else None,
                "one_core_capacity_groups_per_s": round(groups / server_cpu, 1) if server_cpu else None,
                "statuses": run["statuses"],
                "errors": run["errors"],
            }
            levels.append(level)
            log(
                f"{label} c={concurrency}: {level['groups_per_s']} groups/s, p50 "
                f"{level['latency_per_request']['p50_ms']} ms, server CPU {level['server_cpu_ms_per_group']} "
                f"ms/group, statuses {run['statuses']}"
            )
            if run["sample"] and not extra.get("sample_response"):
                extra["sample_response"] = json.loads(run["sample"])
        if args.profile:
            extra["profile"] = await _profile(args, process.pid, host, port, single, tmp)
    extra["server_log_tail"] = tail(log_path, 5)
    return levels, extra


async def _profile(
    args: argparse.Namespace, pid: int, host: str, port: int, payloads: list[bytes], tmp: Path
) -> dict[str, Any]:
    py_spy = args.py_spy or shutil.which("py-spy")
    if not py_spy:
        log("--profile needs py-spy (pip install py-spy, or pass --py-spy PATH); skipped")
        return {"skipped": "py-spy not found"}
    raw = tmp / "profile.txt"
    concurrency = max(args.levels)
    seconds = max(args.seconds, 8.0)
    spy = _start_py_spy(py_spy, pid, seconds, raw)
    await asyncio.sleep(1.0)
    cpu_before = process_cpu_seconds(pid)
    run = await _drive(host, port, "/v1/judge", payloads, concurrency, seconds)
    cpu_ms_per_group = (process_cpu_seconds(pid) - cpu_before) * 1000 / max(run["groups"], 1)
    _, err = await asyncio.to_thread(spy.communicate, timeout=60)
    if spy.returncode != 0 or not raw.exists():
        return {"skipped": f"py-spy failed: {err.decode(errors='replace')[-400:]}"}
    flame = OUT_DIR / f"{NAME}.folded.txt"
    flame.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(raw, flame)
    folded = raw.read_text()
    stages = stage_shares(folded)
    log("where the server's event-loop thread spends its samples, by stage:\n" + stage_table(stages))
    return {
        "folded_stacks": str(flame),
        "groups": run["groups"],
        "server_cpu_ms_per_group": round(cpu_ms_per_group, 3),
        "stages": stages,
        **_top_costs(folded),
    }


def _start_py_spy(py_spy: str, pid: int, seconds: float, raw: Path) -> subprocess.Popen[bytes]:
    # Idle threads (the event loop waiting in epoll) are not sampled; --threads keeps threads apart.
    command = [py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "250"]
    command += ["--threads", "--format", "raw", "--output", str(raw)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _top_costs(folded: str, top: int = 25) -> dict[str, Any]:
    """Samples per thread; then, for the busiest thread (the event loop, where requests are handled),
    own time per function and inclusive time per function, as shares of that thread's samples."""
    by_thread, stacks = threads(folded)
    if not by_thread:
        return {"samples": 0}
    main, total = by_thread.most_common(1)[0]
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for thread, frames, count in stacks:
        if thread != main or not frames:
            continue
        own[_short(frames[-1])] += count
        for frame in {_short(f) for f in frames}:
            inclusive[frame] += count
    all_samples = sum(by_thread.values())
    return {
        "samples": all_samples,
        "thread_shares": {t: round(n / all_samples, 3) for t, n in by_thread.most_common(8)},
        "main_thread": main,
        "top_own": [(f, round(n / total, 4)) for f, n in own.most_common(top)],
        "top_inclusive": [(f, round(n / total, 4)) for f, n in inclusive.most_common(top * 2)],
    }


def _short(frame: str) -> str:
    # py-spy frames look like "function (path/to/file.py:123)"
    name, _, location = frame.partition(" (")
    location = location.rstrip(")")
    path, _, _line = location.rpartition(":")
    for marker in ("site-packages/", "judge_service/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


async def _stage_breakdown(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """The service path in-process (no HTTP), then each stage on its own, in ms of CPU per group."""
    from judge_service.backends.base import GenerationRequest
    from judge_service.backends.fake import FakeBackend
    from judge_service.judging.llm.criteria import resolve_criteria
    from judge_service.judging.llm.parser import output_schema, parse_judgement
    from judge_service.judging.llm.prompt import GroupContent, PromptRenderer
    from judge_service.schemas import JudgeRequest, JudgeResponse, StoredJudgement
    from judge_service.store.sqlite import SqliteJudgementStore

    settings = bench_settings(tmp, backend="fake", home_dir=tmp)
    bodies = make_groups(args.distinct_groups, args.answers, seed=args.seed + 1, run_id="fake-stages")
    raw_bodies = [json.dumps(b).encode() for b in bodies]
    n = args.stage_groups
    stages: dict[str, float] = {}

    def timed(label: str, fn: Any, count: int = n) -> None:
        started = time.process_time()
        for i in range(count):
            fn(i)
        stages[label] = round((time.process_time() - started) * 1000 / count, 4)

    requests = [JudgeRequest.model_validate_json(raw_bodies[i % len(raw_bodies)]) for i in range(n)]
    async with running_app(settings, FakeBackend()) as app:
        service = app.state.service
        sem = asyncio.Semaphore(8)

        async def one(request: JudgeRequest) -> JudgeResponse:
            async with sem:
                response: JudgeResponse = await service.grade(request)
                return response

        started_wall, started_cpu = time.perf_counter(), time.process_time()
        responses = await asyncio.gather(*(one(r) for r in requests))
        grade_wall = time.perf_counter() - started_wall
        stages["service.grade, whole path (CPU, all threads)"] = round(
            (time.process_time() - started_cpu) * 1000 / n, 4
        )
        stored = [await service.get(r.judgement_id) for r in responses[: min(n, 200)]]
        if args.profile:
            cprofile = await _cprofile_grades(service, requests)

    renderer = PromptRenderer(settings.resolved_prompts_dir(), settings.prompt_template)
    criteria = resolve_criteria(None)
    names = [c.name for c in criteria]
    ids = [f"ans-{i}" for i in range(args.answers)]
    reason_chars = settings.resolved_reason_max_chars()
    timed(
        "validate JudgeRequest (model_validate_json)",
        lambda i: JudgeRequest.model_validate_json(raw_bodies[i % len(raw_bodies)]),
    )
    timed(
        "render prompt (Jinja2)",
        lambda i: renderer.render(
            GroupContent(
                conversation=requests[i].conversation,
                reference=requests[i].reference,
                answers=requests[i].answers,
                criteria=criteria,
                reason_max_chars=reason_chars,
            )
        ),
    )
    timed("output_schema", lambda i: output_schema(ids, names, reason_chars))
    fake_request = GenerationRequest(
        messages=[], max_tokens=1, json_schema=output_schema(ids, names, reason_chars)
    )
    reply = json.dumps(FakeBackend.marks_for(fake_request))
    backend = FakeBackend()
    timed("fake reply (cached per answer ids and criteria)", lambda i: backend.unscripted_reply(fake_request))
    timed("parse_judgement", lambda i: parse_judgement(reply, ids, names, reason_chars))
    timed(
        "StoredJudgement.model_dump_json (the stored doc)",
        lambda i: stored[i % len(stored)].model_dump_json(),
    )
    timed("the reply from the stored judgement (response())", lambda i: stored[i % len(stored)].response())
    timed("response JSON (JudgeResponse.model_dump_json)", lambda i: responses[i].model_dump_json())

    store = SqliteJudgementStore(tmp / "stages.sqlite3")
    await store.open()
    save_n = min(n, 300)
    copies = [stored[i % len(stored)].model_copy(update={"judgement_id": f"{i:032x}"}) for i in range(save_n)]
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    for judgement in copies:
        await store.save(judgement)
    stages["store.save, one at a time (wall, incl. fsync)"] = round(
        (time.perf_counter() - started_wall) * 1000 / save_n, 4
    )
    stages["store.save, one at a time (CPU, all threads)"] = round(
        (time.process_time() - started_cpu) * 1000 / save_n, 4
    )
    # 8 saves at a time, as under load: the store commits the ones queued meanwhile together.
    copies = [c.model_copy(update={"judgement_id": f"{i + save_n:032x}"}) for i, c in enumerate(copies)]
    sem = asyncio.Semaphore(8)

    async def save(judgement: StoredJudgement) -> None:
        async with sem:
            await store.save(judgement)

    started_wall, started_cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(save(j) for j in copies))
    stages["store.save, 8 at a time (wall per save, group commit)"] = round(
        (time.perf_counter() - started_wall) * 1000 / save_n, 4
    )
    stages["store.save, 8 at a time (CPU per save, all threads)"] = round(
        (time.process_time() - started_cpu) * 1000 / save_n, 4
    )
    await store.close()
    return {
        "groups": n,
        "service_grade_groups_per_s_in_process": round(n / grade_wall, 1),
        "stage_ms_per_group": stages,
        **({"cprofile_in_process": cprofile} if args.profile else {}),
    }


async def _cprofile_grades(service: Any, requests: list[Any]) -> dict[str, Any]:
    """A deterministic cross-check of the sampled profile: cProfile over in-process grades (it inflates
    Python call costs, so read the shares, not the milliseconds). Functions by own and cumulative time."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    sem = asyncio.Semaphore(8)

    async def one(request: Any) -> None:
        async with sem:
            await service.grade(request)

    profiler.enable()
    await asyncio.gather(*(one(r) for r in requests))
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in rows.values())

    def label(key: tuple[str, int, str]) -> str:
        path, line, name = key
        for marker in ("site-packages/", "judge_service/", "lib/python3.11/"):
            if marker in path:
                path = path.split(marker, 1)[1]
                break
        return f"{name} ({path}:{line})"

    by_own = sorted(rows.items(), key=lambda kv: kv[1][2], reverse=True)[:20]
    by_cum = sorted(rows.items(), key=lambda kv: kv[1][3], reverse=True)[:40]
    return {
        "groups": len(requests),
        "profiled_ms_per_group": round(total * 1000 / len(requests), 3),
        "top_own_share": [(label(k), round(v[2] / total, 4)) for k, v in by_own],
        "top_cumulative_share": [(label(k), round(v[3] / total, 4)) for k, v in by_cum],
    }


def _table(levels: list[dict[str, Any]], stages: dict[str, Any]) -> str:
    rows = [
        [
            lv["endpoint"],
            lv["concurrency"],
            lv["groups_per_s"],
            lv["latency_per_request"]["p50_ms"],
            lv["latency_per_request"]["p99_ms"],
            lv["server_cpu_ms_per_group"],
            lv["server_cpu_util"],
            lv["one_core_capacity_groups_per_s"],
        ]
        for lv in levels
    ]
    table = markdown_table(
        [
            "endpoint",
            "concurrency",
            "groups/s",
            "p50 ms",
            "p99 ms",
            "server CPU ms/group",
            "server CPU util",
            "groups/s per server core",
        ],
        rows,
    )
    stage_rows = [[k, v] for k, v in stages["stage_ms_per_group"].items()]
    table += (
        f"\n\nIn-process (no HTTP) JudgeService.grade: {stages['service_grade_groups_per_s_in_process']} "
        "groups/s\n\n" + markdown_table(["stage (N=8, 4 criteria)", "ms per group"], stage_rows)
    )
    return table


async def run(args: argparse.Namespace) -> Outcome:
    with workdir(NAME) as tmp:
        levels, extra = await _http_levels(args, tmp)
        log("in-process stage breakdown ...")
        stages = await _stage_breakdown(args, tmp)
    best = max(levels, key=lambda lv: lv["groups_per_s"]) if levels else None
    result = {
        "answers_per_group": args.answers,
        "criteria": 4,
        "levels": levels,
        "stages": stages,
        "best_groups_per_s": best["groups_per_s"] if best else None,
        "added_latency_p50_ms_at_concurrency_1": next(
            (lv["latency_per_request"]["p50_ms"] for lv in levels if lv["concurrency"] == 1), None
        ),
        "goal_groups_per_s": 1000,
        "goal_met": bool(best and best["groups_per_s"] >= 1000),
        "goal_ratio": ratio(best["groups_per_s"], 1000) if best else None,
        **extra,
    }
    return Outcome(result, _table(levels, stages))


EXPERIMENT = Experiment(
    options=[
        *shared(seconds=(5.0, "measured seconds per level")),
        option("--warmup", 2.0, "seconds of load before the levels"),
        option("--levels", "1,8,32,128", "connections in flight, comma-separated", type=ints),
        option("--batch-levels", "1,4", "batch requests in flight, comma-separated", type=ints),
        option("--batch-size", 16, "groups per batch request, if supported"),
        *shared(answers=8),
        option("--distinct-groups", 256, "distinct groups the load cycles through"),
        option("--stage-groups", 1000, "groups graded in-process for the stage breakdown"),
        *shared(seed=7),
        option("--profile", help="py-spy the server at the highest level", action="store_true"),
        option("--py-spy", os.environ.get("PY_SPY"), "path to the py-spy binary"),
    ],
    run=run,
    uvloop=True,
)

EXPERIMENT.run_if_main(__name__)
