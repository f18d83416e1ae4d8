"""Rubrics on the real engine: what a written rubric costs per prompt, and a group judged on a 12-item
checklist against the four default criteria.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.rubrics [--prompts 6] [--items 12] [--levels 1,4]

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

import argparse
import asyncio
import sys
import time
from statistics import mean
from typing import Any

from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import workdir
from judge_service.errors import JudgeServiceError
from judge_service.schemas import JudgeRequest, JudgeResponse, Rubric, RubricRequest

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
    async def grade_group(body: dict[str, Any]) -> JudgeResponse:
        response: JudgeResponse = await service.grade(JudgeRequest.model_validate(body))
        return response

    bodies = [
        body if mode == "rubric" else {k: v for k, v in body.items() if k != "rubric"} for body in groups
    ]
    load = await run_load(bodies, grade_group, concurrency=concurrency)
    responses: list[JudgeResponse] = list(load.results)
    answers = [a for r in responses for a in r.answers]
    n = max(1, load.ok)
    return {
        "mode": mode,
        "concurrency": concurrency,
        "groups": load.ok,
        "errors": load.errors[:3],
        "groups_per_s": round(load.per_second(), 4),
        "latency": latency_summary(load.latencies_s),
        "prompt_tokens_per_group": round(sum(r.usage.prompt_tokens for r in responses) / n, 1),
        "completion_tokens_per_group": round(sum(r.usage.completion_tokens for r in responses) / n, 1),
        "criteria_per_answer": round(mean(len(a.criteria or {}) for a in answers), 1) if answers else None,
        "scored_share": round(sum(a.status == "scored" for a in answers) / max(1, len(answers)), 4),
    }


async def _main(args: argparse.Namespace) -> int:
    levels = [int(x) for x in args.levels.split(",")]
    entries: list[dict[str, Any]] = []
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            reason_max_chars=60,
            reason_words=True,
            parse_retries=1,
            decoding="per_answer",
            score_from="expected",
            max_groups_in_flight=max(levels) * args.answers,
            max_groups_queued=max(levels) * args.answers,
        )
        engine = await start_engine(settings)
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                groups = make_groups(
                    args.prompts, args.answers, seed=args.seed, run_id=NAME, fixed_order=True
                )
                log("warm-up: one rubric and one group each way (not measured)")
                warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
                warm_rubric = await service.rubrics.write(
                    RubricRequest(
                        conversation=warm[0]["conversation"], reference=warm[0]["reference"], items=3
                    )
                )
                for mode in MODES:
                    await judge_level(service, [{**warm[0], "rubric": warm_rubric.id}], mode, 1)
                rubrics, writing = await write_all(service, groups, args.items)
                log(f"writing: {writing}")
                by_reference = {r.request.reference: r.id for r in rubrics}
                judged = [
                    {**g, "rubric": by_reference[g["reference"]]}
                    for g in groups
                    if g["reference"] in by_reference
                ]
                for index, level in enumerate(levels):
                    rotation = MODES[index % len(MODES) :] + MODES[: index % len(MODES)]
                    for mode in rotation:
                        await reset_prefix_cache(engine)
                        entry = await judge_level(service, judged, mode, level)
                        entries.append(entry)
                        log(f"c={level} {mode}: p50 {entry['latency']['p50_ms'] / 1000:.1f} s, {entry}")
        finally:
            await engine.close()
    return _report(args, levels, writing, entries)


def _report(
    args: argparse.Namespace, levels: list[int], writing: dict[str, Any], entries: list[dict[str, Any]]
) -> int:
    by = {(e["mode"], e["concurrency"]): e for e in entries}
    ratios = {
        f"c{level}": {
            "p50_rubric_over_default": ratio(
                by[("rubric", level)]["latency"]["p50_ms"], by[("default", level)]["latency"]["p50_ms"]
            ),
            "groups_per_s_rubric_over_default": ratio(
                by[("rubric", level)]["groups_per_s"], by[("default", level)]["groups_per_s"]
            ),
            "completion_tokens_rubric_over_default": ratio(
                by[("rubric", level)]["completion_tokens_per_group"],
                by[("default", level)]["completion_tokens_per_group"],
            ),
        }
        for level in levels
    }
    rows = [
        [
            e["mode"],
            e["concurrency"],
            e["groups"],
            e["criteria_per_answer"],
            round(e["latency"]["p50_ms"] / 1000, 2),
            round(e["latency"]["p99_ms"] / 1000, 2),
            e["groups_per_s"],
            e["prompt_tokens_per_group"],
            e["completion_tokens_per_group"],
            e["scored_share"],
        ]
        for e in sorted(entries, key=lambda e: (e["concurrency"], MODES.index(e["mode"])))
    ]
    table = markdown_table(
        [
            "criteria",
            "groups in flight",
            "groups",
            "criteria/answer",
            "p50 s",
            "p99 s",
            "groups/s",
            "prompt tokens/group",
            "completion tokens/group",
            "scored",
        ],
        rows,
    )
    result = {
        "answers": args.answers,
        "levels": levels,
        "writing": writing,
        "judging": entries,
        "ratios": ratios,
    }
    write_result(NAME, result, table)
    print(f"writing: {writing}\nratios: {ratios}")
    return 0 if all(e["groups"] for e in entries) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=6, help="prompts (groups) to write rubrics for")
    parser.add_argument("--items", type=int, default=12, help="items per rubric")
    parser.add_argument("--answers", type=int, default=4, help="answers per group")
    parser.add_argument("--levels", default="1,4", help="groups in flight, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
