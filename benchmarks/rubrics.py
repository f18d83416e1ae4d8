"""Rubrics on the real engine: what a written rubric costs per prompt, and a group judged on a 12-item
checklist against the four default criteria.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks rubrics [--prompts 6] [--items 12] [--levels 1,4]

One engine, one process; everything goes through the service's own RubricService and JudgeService.grade
(in-process), with the embedded judge's per-answer decoding, reasons inline (words, <= 60 chars) and
scores from expected marks.
- Writing: the rubric of each of `--prompts` groups' prompts, one after the other (POST /v1/rubrics's
  path), then the same prompts again (stored: no judge call). Reported: seconds, judge calls, prompt and
  completion tokens per rubric, and what the stored lookup costs.
- Judging: the same groups at each concurrency level c (closed loop), once on the four default criteria
  and once on the prompt's written rubric (`rubric: <id>`), in turn (the first rotating per level), the
  prefix cache emptied before each. Reported: group latency p50/p99, groups/s, prompt and completion
  tokens per group, and the ratios rubric / default.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from statistics import mean
from typing import Any

from benchmarks.engine import Judge, grade_groups, judge_on_engine, judged, judged_table, reset_prefix_cache
from benchmarks.experiment import Experiment, Run, col, option, shared
from benchmarks.groups import make_groups
from benchmarks.report import log, ratio
from judge_service.errors import JudgeServiceError
from judge_service.schemas import Rubric, RubricRequest

NAME = "rubrics"
MODES = ("default", "rubric")


async def write_all(
    service: Any, groups: list[dict[str, Any]], items: int
) -> tuple[list[Rubric], dict[str, Any]]:
    """Each group's rubric, written one after the other; then read again from the store."""
    rubrics: list[Rubric] = []
    seconds: list[float] = []
    failures: list[str] = []
    for body in groups:
        request = RubricRequest(conversation=body["conversation"], reference=body["reference"], items=items)
        started = time.perf_counter()
        try:
            rubrics.append(await service.rubrics.write(request))
        except JudgeServiceError as exc:  # the judge wrote no valid rubric: counted, never made up
            failures.append(f"{exc.code}: {exc.message[:160]}")
            log(f"rubric failed after {time.perf_counter() - started:.1f} s: {failures[-1]}")
            continue
        seconds.append(time.perf_counter() - started)
        log(f"rubric {len(rubrics)}: {seconds[-1]:.1f} s, {rubrics[-1].usage.completion_tokens} tokens")
    stored: list[float] = []
    for body in [g for g in groups if any(r.request.reference == g["reference"] for r in rubrics)]:
        request = RubricRequest(conversation=body["conversation"], reference=body["reference"], items=items)
        started = time.perf_counter()
        await service.rubrics.write(request)
        stored.append(time.perf_counter() - started)
    n = len(rubrics)
    summary = {
        "prompts": len(groups),
        "written": n,
        "failed": failures,
        "items": items,
        "seconds_per_rubric": round(mean(seconds), 2),
        "seconds_max": round(max(seconds), 2),
        "judge_calls_per_rubric": round(sum(r.usage.judge_calls for r in rubrics) / n, 2),
        "prompt_tokens_per_rubric": round(sum(r.usage.prompt_tokens for r in rubrics) / n, 1),
        "completion_tokens_per_rubric": round(sum(r.usage.completion_tokens for r in rubrics) / n, 1),
        "pitfalls_per_rubric": round(sum(c.pitfall for r in rubrics for c in r.criteria) / n, 2),
        "stored_lookup_ms": round(mean(stored) * 1000, 2),
        "example": [f"{c.kind}: {c.description}" for c in rubrics[0].criteria],
    }
    return rubrics, summary


async def judge_level(
    service: Any, groups: list[dict[str, Any]], mode: str, concurrency: int
) -> dict[str, Any]:
    bodies = [
        body if mode == "rubric" else {k: v for k, v in body.items() if k != "rubric"} for body in groups
    ]
    load, responses = await grade_groups(service, bodies, concurrency)
    answers = [a for r in responses for a in r.answers]
    return {
        "mode": mode,
        "concurrency": concurrency,
        **judged(load, responses),
        "criteria_per_answer": round(mean(len(a.criteria or {}) for a in answers), 1) if answers else None,
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[tuple[Judge, list[dict[str, Any]]]]:
    """One engine; after a warm-up, the rubric of every prompt written (the writing part); yields the
    judge and the groups that got a rubric, each naming it."""
    args = run.args
    async with judge_on_engine(
        NAME,
        reason_max_chars=60,
        reason_words=True,
        parse_retries=1,
        decoding="per_answer",
        score_from="expected",
        max_groups_in_flight=max(args.levels) * args.answers,
        max_groups_queued=max(args.levels) * args.answers,
    ) as judge:
        service = judge.service
        groups = make_groups(args.prompts, args.answers, seed=args.seed, run_id=NAME, fixed_order=True)
        log("warm-up: one rubric and one group each way (not measured)")
        warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
        warm_rubric = await service.rubrics.write(
            RubricRequest(conversation=warm[0]["conversation"], reference=warm[0]["reference"], items=3)
        )
        for mode in MODES:
            await judge_level(service, [{**warm[0], "rubric": warm_rubric.id}], mode, 1)
        rubrics, run.result["writing"] = await write_all(service, groups, args.items)
        log(f"writing: {run.result['writing']}")
        by_reference = {r.request.reference: r.id for r in rubrics}
        yield (
            judge,
            [{**g, "rubric": by_reference[g["reference"]]} for g in groups if g["reference"] in by_reference],
        )


async def measure(run: Run, mode: str, level: int) -> dict[str, Any]:
    judge, groups = run.state
    await reset_prefix_cache(judge.engine)
    return await judge_level(judge.service, groups, mode, level)


def report(run: Run) -> None:
    def of(key: str, level: int) -> float:
        return ratio(run.cell("rubric", level)[key], run.cell("default", level)[key])

    run.result["ratios"] = ratios = {
        f"c{level}": {
            "p50_rubric_over_default": of("latency.p50_ms", level),
            "groups_per_s_rubric_over_default": of("groups_per_s", level),
            "completion_tokens_rubric_over_default": of("completion_tokens_per_group", level),
        }
        for level in run.args.levels
    }
    run.result |= {"answers": run.args.answers, "levels": run.args.levels}
    run.notes.append(f"writing: {run.result['writing']}\nratios: {ratios}")


EXPERIMENT = Experiment(
    options=[
        option("--prompts", 6, "prompts (groups) to write rubrics for"),
        option("--items", 12, "items per rubric"),
        *shared(answers=4, levels="1,4", seed=0),
    ],
    arms=MODES,
    levels="levels",
    columns=judged_table("criteria", col("criteria/answer", "criteria_per_answer")),
)

EXPERIMENT.run_if_main(__name__)
