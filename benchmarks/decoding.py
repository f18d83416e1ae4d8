"""Per-answer decoding vs single-sequence (group) decoding vs point-wise judging, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.decoding [--levels 1,8,32] [--answers 8]

One engine, one process; every group goes through the service's own JudgeService.grade (in-process).
Three ways to judge a group of N answers on the default four criteria:
- group: `decoding=group`, one engine request whose reply marks all N answers (one long sequence);
- per_answer: `decoding=per_answer`, N engine requests over one shared prompt prefix (the whole group),
  each marking one answer; the replies decode side by side;
- pointwise: N one-answer groups (the judge never sees the other answers).
At each concurrency level c (groups in flight, closed loop), the modes run in turn on the same groups
(the first mode of each level rotates), the engine's prefix cache emptied before each. Reported per mode
and level: group latency p50/p99 (p99 of few groups is close to the max), groups/s, prompt and
completion tokens per group, and the prefix cache hit rate (hit / queried prompt tokens, from the
engine's own statistics). Reasons are constrained to words (<= 60 chars), parse_retries is 0 so
every judge call is one engine request, and admission is opened so it never caps a mode.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups, split_pointwise
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import workdir
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest, JudgeResponse

NAME = "decoding"
MODES = ("per_answer", "group", "pointwise")


def bodies_for(body: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    if mode == "pointwise":
        return [{**b, "decoding": "group"} for b in split_pointwise(body)]
    return [{**body, "decoding": mode}]


async def mode_level(
    service: Any, metrics: JudgeMetrics, groups: list[dict[str, Any]], mode: str, concurrency: int
) -> dict[str, Any]:
    async def grade_group(body: dict[str, Any]) -> list[JudgeResponse]:
        requests = [JudgeRequest.model_validate(b) for b in bodies_for(body, mode)]
        return list(await asyncio.gather(*(service.grade(r) for r in requests)))

    queried = metrics.engine_prefix_cache_queries._value.get()
    hits = metrics.engine_prefix_cache_hits._value.get()
    load = await run_load(groups, grade_group, concurrency=concurrency)
    queried = metrics.engine_prefix_cache_queries._value.get() - queried
    hits = metrics.engine_prefix_cache_hits._value.get() - hits
    responses = [r for group in load.results for r in group]
    answers = [a for r in responses for a in r.answers]
    n = max(1, load.ok)
    return {
        "mode": mode,
        "concurrency": concurrency,
        "groups": load.ok,
        "errors": load.errors[:3],
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "latency": latency_summary(load.latencies_s),
        "judge_calls_per_group": round(sum(r.usage.judge_calls for r in responses) / n, 2),
        "prompt_tokens_per_group": round(sum(r.usage.prompt_tokens for r in responses) / n, 1),
        "completion_tokens_per_group": round(sum(r.usage.completion_tokens for r in responses) / n, 1),
        "prefix_cache_hit_rate": round(hits / queried, 4) if queried else None,
        "scored_share": round(sum(a.status == "scored" for a in answers) / max(1, len(answers)), 4),
    }


async def _main(args: argparse.Namespace) -> int:
    levels = [int(x) for x in args.levels.split(",")]
    entries: list[dict[str, Any]] = []
    metrics = JudgeMetrics()
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            reason_max_chars=args.reason_chars,
            reason_words=True,
            parse_retries=0,
            max_groups_in_flight=max(levels) * args.answers,
            max_groups_queued=max(levels) * args.answers,
        )
        engine = await start_engine(settings, metrics)
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                log("warm-up: one group each way (not measured)")
                warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
                for mode in MODES:
                    await mode_level(service, metrics, warm, mode, 1)
                for index, level in enumerate(levels):
                    count = max(level, args.min_groups)
                    groups = make_groups(
                        count, args.answers, seed=args.seed + level, run_id=NAME, fixed_order=True
                    )
                    rotation = MODES[index % 3 :] + MODES[: index % 3]
                    for mode in rotation:
                        await reset_prefix_cache(engine)
                        entry = await mode_level(service, metrics, groups, mode, level)
                        entries.append(entry)
                        log(f"c={level} {mode}: {_line(entry)}")
        finally:
            await engine.close()
    return _report(args, levels, entries)


def _line(entry: dict[str, Any]) -> str:
    return (
        f"p50 {entry['latency']['p50_ms'] / 1000:.1f} s, {entry['groups_per_s']} groups/s, "
        f"{entry['completion_tokens_per_group']} completion tokens/group, prefix cache hits "
        f"{entry['prefix_cache_hit_rate']}, scored {entry['scored_share']}"
    )


def _report(args: argparse.Namespace, levels: list[int], entries: list[dict[str, Any]]) -> int:
    by = {(e["mode"], e["concurrency"]): e for e in entries}
    ratios = {
        f"c{level}": {
            "p50_group_over_per_answer": ratio(
                by[("group", level)]["latency"]["p50_ms"], by[("per_answer", level)]["latency"]["p50_ms"]
            ),
            "groups_per_s_per_answer_over_group": ratio(
                by[("per_answer", level)]["groups_per_s"], by[("group", level)]["groups_per_s"]
            ),
            "groups_per_s_per_answer_over_pointwise": ratio(
                by[("per_answer", level)]["groups_per_s"], by[("pointwise", level)]["groups_per_s"]
            ),
        }
        for level in levels
    }
    rows = [
        [
            e["mode"],
            e["concurrency"],
            e["groups"],
            round(e["latency"]["p50_ms"] / 1000, 2),
            round(e["latency"]["p99_ms"] / 1000, 2),
            e["groups_per_s"],
            e["judge_calls_per_group"],
            e["prompt_tokens_per_group"],
            e["completion_tokens_per_group"],
            e["prefix_cache_hit_rate"],
            e["scored_share"],
        ]
        for e in sorted(entries, key=lambda e: (e["concurrency"], MODES.index(e["mode"])))
    ]
    table = markdown_table(
        [
            "mode",
            "groups in flight",
            "groups",
            "p50 s",
            "p99 s",
            "groups/s",
            "calls/group",
            "prompt tokens/group",
            "completion tokens/group",
            "prefix cache hit rate",
            "scored",
        ],
        rows,
    )
    lines = [
        f"- {level} in flight: group p50 / per-answer p50 **{r['p50_group_over_per_answer']}**, groups/s "
        f"per-answer / group **{r['groups_per_s_per_answer_over_group']}**, per-answer / point-wise "
        f"{r['groups_per_s_per_answer_over_pointwise']}"
        for level, r in zip(levels, ratios.values(), strict=True)
    ]
    table += "\n\n" + "\n".join(lines)
    result = {"config": vars(args), "entries": entries, "ratios": ratios}
    write_result(NAME, result, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--levels", default="1,8,32", help="groups in flight, comma-separated")
    parser.add_argument(
        "--min-groups", type=int, default=3, help="groups per level at least (p99 needs some)"
    )
    parser.add_argument("--answers", type=int, default=8, help="N, answers per group")
    parser.add_argument("--reason-chars", type=int, default=60)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
