"""Marks only vs reasons inline vs a 10% sample with reasons, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.reasons [--levels 1,8,32] [--answers 8]

One engine, one process; every group goes through the service's own JudgeService.grade (in-process),
scores from expected marks (the marks-only judge's graded scores come from the log-probabilities at each
mark). The settings of `reasons`, on the same groups, with the embedded judge's per-answer decoding:
- inline: a reason (words, <= 60 chars) before each mark, as today;
- none: the marks only, {"correctness":4,...} per answer;
- sample: inline for a share of groups drawn by judgement id (JUDGE_REASON_SAMPLE_RATE, 0.1), none for
  the rest;
and `none` in the group decoding (one reply marks all N answers: without reasons that sequence is short,
and the group's prompt is computed once instead of N times).
At each concurrency level c (groups in flight, closed loop), the settings run in turn on the same groups
(the first of each level rotates), the prefix cache emptied before each. Reported per setting and level:
group latency p50/p99, groups/s, completion tokens per group; and the agreement of `none` with `inline`
on the same groups: Kendall tau-b of the answers' scores per group (mean over groups where both rank
the answers at all), and the mean absolute difference of the scores.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from statistics import mean
from typing import Any

from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import workdir
from judge_service.quality.agreement import kendall_tau_b
from judge_service.schemas import JudgeRequest, JudgeResponse

NAME = "reasons"
MODES = ("inline", "none", "sample", "none/group")  # reasons, and /group: the group decoding


async def mode_level(
    service: Any, groups: list[dict[str, Any]], mode: str, concurrency: int
) -> tuple[dict[str, Any], list[JudgeResponse]]:
    reasons, _, decoding = mode.partition("/")

    async def grade_group(body: dict[str, Any]) -> JudgeResponse:
        request = JudgeRequest.model_validate(
            {**body, "reasons": reasons, "decoding": decoding or "per_answer"}
        )
        response: JudgeResponse = await service.grade(request)
        return response

    load = await run_load(groups, grade_group, concurrency=concurrency)
    responses: list[JudgeResponse] = list(load.results)
    answers = [a for r in responses for a in r.answers]
    n = max(1, load.ok)
    entry = {
        "mode": mode,
        "concurrency": concurrency,
        "groups": load.ok,
        "errors": load.errors[:3],
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "latency": latency_summary(load.latencies_s),
        "completion_tokens_per_group": round(sum(r.usage.completion_tokens for r in responses) / n, 1),
        "prompt_tokens_per_group": round(sum(r.usage.prompt_tokens for r in responses) / n, 1),
        "groups_with_reasons": sum(r.reasons == "inline" for r in responses),
        "scored_share": round(sum(a.status == "scored" for a in answers) / max(1, len(answers)), 4),
    }
    return entry, responses


def agreement(inline: list[JudgeResponse], none: list[JudgeResponse]) -> dict[str, Any]:
    """Kendall tau-b per group of the scores both ways (groups matched by group key), and the mean
    absolute difference of the answers' scores."""
    by_key = {r.group_key: r for r in none}
    taus: list[float] = []
    differences: list[float] = []
    for first in inline:
        second = by_key.get(first.group_key)
        if second is None:
            continue
        pairs = [
            (a.score, b.score)
            for a, b in zip(first.answers, second.answers, strict=True)
            if a.score is not None and b.score is not None
        ]
        differences += [abs(x - y) for x, y in pairs]
        tau = kendall_tau_b([x for x, _ in pairs], [y for _, y in pairs]) if len(pairs) >= 2 else None
        if tau is not None:
            taus.append(tau)
    return {
        "groups": len(inline),
        "groups_with_tau": len(taus),
        "mean_kendall_tau_b": round(mean(taus), 4) if taus else None,
        "mean_abs_score_difference": round(mean(differences), 4) if differences else None,
    }


async def _main(args: argparse.Namespace) -> int:
    levels = [int(x) for x in args.levels.split(",")]
    entries: list[dict[str, Any]] = []
    agreements: dict[str, dict[str, Any]] = {}
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            reason_max_chars=args.reason_chars,
            reason_words=True,
            parse_retries=0,
            decoding="per_answer",
            score_from="expected",
            reason_sample_rate=args.sample_rate,
            max_groups_in_flight=max(levels) * args.answers,
            max_groups_queued=max(levels) * args.answers,
        )
        engine = await start_engine(settings)
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                log("warm-up: one group each way (not measured)")
                warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
                for mode in MODES:
                    await mode_level(service, warm, mode, 1)
                for index, level in enumerate(levels):
                    count = max(level, args.min_groups)
                    groups = make_groups(
                        count, args.answers, seed=args.seed + level, run_id=NAME, fixed_order=True
                    )
                    rotation = MODES[index % len(MODES) :] + MODES[: index % len(MODES)]
                    judged: dict[str, list[JudgeResponse]] = {}
                    for mode in rotation:
                        await reset_prefix_cache(engine)
                        entry, judged[mode] = await mode_level(service, groups, mode, level)
                        entries.append(entry)
                        log(f"c={level} {mode}: {_line(entry)}")
                    agreements[f"c{level}"] = agreement(judged["inline"], judged["none"])
                    log(f"c={level} none vs inline: {agreements[f'c{level}']}")
                    if index == 0:  # what a marks-only reply looks like, for the report
                        for mode in ("none", "none/group"):
                            stored = await service.get(judged[mode][0].judgement_id)
                            log(f"a {mode} reply: {stored.raw_outputs[0]!r}")
        finally:
            await engine.close()
    return _report(args, levels, entries, agreements)


def _line(entry: dict[str, Any]) -> str:
    return (
        f"p50 {entry['latency']['p50_ms'] / 1000:.1f} s, {entry['groups_per_s']} groups/s, "
        f"{entry['completion_tokens_per_group']} completion tokens/group, "
        f"{entry['groups_with_reasons']} with reasons, scored {entry['scored_share']}"
    )


def _report(
    args: argparse.Namespace,
    levels: list[int],
    entries: list[dict[str, Any]],
    agreements: dict[str, dict[str, Any]],
) -> int:
    by = {(e["mode"], e["concurrency"]): e for e in entries}
    ratios = {
        f"c{level}": {
            f"groups_per_s_{mode}_over_inline": ratio(
                by[(mode, level)]["groups_per_s"], by[("inline", level)]["groups_per_s"]
            )
            for mode in ("none", "sample", "none/group")
        }
        | {
            "p50_inline_over_none": ratio(
                by[("inline", level)]["latency"]["p50_ms"], by[("none", level)]["latency"]["p50_ms"]
            )
        }
        for level in levels
    }
    rows = [
        [
            e["mode"],
            e["concurrency"],
            e["groups"],
            e["groups_with_reasons"],
            round(e["latency"]["p50_ms"] / 1000, 2),
            round(e["latency"]["p99_ms"] / 1000, 2),
            e["groups_per_s"],
            e["prompt_tokens_per_group"],
            e["completion_tokens_per_group"],
            ratio(e["groups_per_s"], by[("inline", e["concurrency"])]["groups_per_s"]),
            e["scored_share"],
        ]
        for e in sorted(entries, key=lambda e: (e["concurrency"], MODES.index(e["mode"])))
    ]
    table = markdown_table(
        [
            "reasons",
            "groups in flight",
            "groups",
            "with reasons",
            "p50 s",
            "p99 s",
            "groups/s",
            "prompt tokens/group",
            "completion tokens/group",
            "groups/s / inline",
            "scored",
        ],
        rows,
    )
    lines = [
        f"- {level} in flight: none vs inline on the same {a['groups']} groups: mean Kendall tau-b "
        f"{a['mean_kendall_tau_b']} over {a['groups_with_tau']} groups that rank their answers both ways, "
        f"mean |score difference| {a['mean_abs_score_difference']}"
        for level, a in zip(levels, agreements.values(), strict=True)
    ]
    table += "\n\n" + "\n".join(lines)
    write_result(
        NAME, {"config": vars(args), "entries": entries, "ratios": ratios, "agreement": agreements}, table
    )
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
    parser.add_argument("--sample-rate", type=float, default=0.1, help="JUDGE_REASON_SAMPLE_RATE for sample")
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
