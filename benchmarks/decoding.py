"""Per-answer decoding vs single-sequence (group) decoding vs point-wise judging, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks decoding [--levels 1,8,32] [--answers 8]

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

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from benchmarks.engine import Judge, grade_groups, judge_on_engine, judged, judged_table, reset_prefix_cache
from benchmarks.experiment import Experiment, Run, col, shared
from benchmarks.groups import make_groups, split_pointwise
from benchmarks.report import ratio
from judge_service.metrics import JudgeMetrics

NAME = "decoding"
MODES = ("per_answer", "group", "pointwise")


def bodies_for(body: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    if mode == "pointwise":
        return [{**b, "decoding": "group"} for b in split_pointwise(body)]
    return [{**body, "decoding": mode}]


async def mode_level(
    service: Any, metrics: JudgeMetrics, groups: list[dict[str, Any]], mode: str, concurrency: int
) -> dict[str, Any]:
    queried = metrics.engine_prefix_cache_queries._value.get()
    hits = metrics.engine_prefix_cache_hits._value.get()
    load, responses = await grade_groups(service, groups, concurrency, lambda b: bodies_for(b, mode))
    queried = metrics.engine_prefix_cache_queries._value.get() - queried
    hits = metrics.engine_prefix_cache_hits._value.get() - hits
    return {
        "mode": mode,
        "concurrency": concurrency,
        **judged(load, responses),
        "prefix_cache_hit_rate": round(hits / queried, 4) if queried else None,
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[tuple[Judge, JudgeMetrics]]:
    """One engine and the app on it, warmed up with one group each way (not measured)."""
    args, metrics = run.args, JudgeMetrics()
    in_flight = max(args.levels) * args.answers
    async with judge_on_engine(
        NAME,
        metrics,
        reason_max_chars=args.reason_chars,
        reason_words=True,
        parse_retries=0,
        max_groups_in_flight=in_flight,
        max_groups_queued=in_flight,
    ) as judge:
        warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
        for mode in MODES:
            await mode_level(judge.service, metrics, warm, mode, 1)
        yield judge, metrics


async def measure(run: Run, mode: str, level: int) -> dict[str, Any]:
    """One mode on the level's groups (the same for every mode), the prefix cache emptied first."""
    (judge, metrics), args = run.state, run.args
    count = max(level, args.min_groups)
    groups = make_groups(count, args.answers, seed=args.seed + level, run_id=NAME, fixed_order=True)
    await reset_prefix_cache(judge.engine)
    return await mode_level(judge.service, metrics, groups, mode, level)


def report(run: Run) -> None:
    ratios: dict[str, dict[str, float]] = {}
    for level in run.args.levels:
        group, per_answer, pointwise = (
            run.cell(mode, level) for mode in ("group", "per_answer", "pointwise")
        )
        ratios[f"c{level}"] = {
            "p50_group_over_per_answer": ratio(group["latency.p50_ms"], per_answer["latency.p50_ms"]),
            "groups_per_s_per_answer_over_group": ratio(per_answer["groups_per_s"], group["groups_per_s"]),
            "groups_per_s_per_answer_over_pointwise": ratio(
                per_answer["groups_per_s"], pointwise["groups_per_s"]
            ),
        }
    run.result["ratios"] = ratios
    run.notes.append(
        "\n".join(
            f"- {level[1:]} in flight: group p50 / per-answer p50 **{r['p50_group_over_per_answer']}**, "
            f"groups/s per-answer / group **{r['groups_per_s_per_answer_over_group']}**, per-answer / "
            f"point-wise {r['groups_per_s_per_answer_over_pointwise']}"
            for level, r in ratios.items()
        )
    )


EXPERIMENT = Experiment(
    options=[*shared(levels="1,8,32", answers=8, min_groups=3, reason_chars=60, seed=41)],
    arms=MODES,
    levels="levels",
    columns=judged_table("mode", col("prefix cache hit rate", "prefix_cache_hit_rate")),
)

EXPERIMENT.run_if_main(__name__)
