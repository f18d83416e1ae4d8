"""Marks only vs reasons inline vs a 10% sample with reasons, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks reasons [--levels 1,8,32] [--answers 8]

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

import contextlib
from collections.abc import AsyncIterator
from statistics import mean
from typing import Any

from benchmarks.engine import Judge, grade_groups, judge_on_engine, judged, judged_table, reset_prefix_cache
from benchmarks.experiment import Experiment, Run, col, option, ratio_col, shared
from benchmarks.groups import make_groups
from benchmarks.report import log, ratio
from judge_service.quality.agreement import kendall_tau_b
from judge_service.schemas import JudgeResponse

NAME = "reasons"
MODES = ("inline", "none", "sample", "none/group")  # reasons, and /group: the group decoding


async def mode_level(
    service: Any, groups: list[dict[str, Any]], mode: str, concurrency: int
) -> tuple[dict[str, Any], list[JudgeResponse]]:
    reasons, _, decoding = mode.partition("/")
    load, responses = await grade_groups(
        service,
        groups,
        concurrency,
        lambda body: [{**body, "reasons": reasons, "decoding": decoding or "per_answer"}],
    )
    entry = {
        "mode": mode,
        "concurrency": concurrency,
        **judged(load, responses),
        "groups_with_reasons": sum(r.reasons == "inline" for r in responses),
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


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[Judge]:
    """One engine in per-answer decoding, scores from expected marks; warmed up one group each way."""
    args = run.args
    async with judge_on_engine(
        NAME,
        reason_max_chars=args.reason_chars,
        reason_words=True,
        parse_retries=0,
        decoding="per_answer",
        score_from="expected",
        reason_sample_rate=args.sample_rate,
        max_groups_in_flight=max(args.levels) * args.answers,
        max_groups_queued=max(args.levels) * args.answers,
    ) as judge:
        warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
        for mode in MODES:
            await mode_level(judge.service, warm, mode, 1)
        run.result["agreement"] = {}
        yield judge


async def measure(run: Run, mode: str, level: int) -> dict[str, Any]:
    """One setting on the level's groups; once inline and none both judged them, their agreement."""
    judge, args = run.state, run.args
    count = max(level, args.min_groups)
    groups = make_groups(count, args.answers, seed=args.seed + level, run_id=NAME, fixed_order=True)
    await reset_prefix_cache(judge.engine)
    entry, responses = await mode_level(judge.service, groups, mode, level)
    judged_here = run.result.setdefault("judged", {}).setdefault(level, {})
    judged_here[mode] = responses
    if mode.startswith("none") and level == args.levels[0]:  # what a marks-only reply looks like
        stored = await judge.service.get(responses[0].judgement_id)
        log(f"a {mode} reply: {stored.raw_outputs[0]!r}")
    if "inline" in judged_here and "none" in judged_here and f"c{level}" not in run.result["agreement"]:
        run.result["agreement"][f"c{level}"] = found = agreement(judged_here["inline"], judged_here["none"])
        log(f"c={level} none vs inline: {found}")
    return entry


def report(run: Run) -> None:
    run.result.pop("judged", None)
    run.result["ratios"] = {
        f"c{level}": {
            f"groups_per_s_{mode}_over_inline": ratio(
                run.cell(mode, level)["groups_per_s"], run.cell("inline", level)["groups_per_s"]
            )
            for mode in MODES[1:]
        }
        | {
            "p50_inline_over_none": ratio(
                run.cell("inline", level)["latency.p50_ms"], run.cell("none", level)["latency.p50_ms"]
            )
        }
        for level in run.args.levels
    }
    run.notes.append(
        "\n".join(
            f"- {level[1:]} in flight: none vs inline on the same {a['groups']} groups: mean Kendall tau-b "
            f"{a['mean_kendall_tau_b']} over {a['groups_with_tau']} groups that rank their answers both "
            f"ways, mean |score difference| {a['mean_abs_score_difference']}"
            for level, a in run.result["agreement"].items()
        )
    )


EXPERIMENT = Experiment(
    options=[
        *shared(levels="1,8,32", min_groups=3, answers=8, reason_chars=60, seed=43),
        option("--sample-rate", 0.1, "JUDGE_REASON_SAMPLE_RATE for sample"),
    ],
    arms=MODES,
    levels="levels",
    columns=judged_table(
        "reasons",
        col("with reasons", "groups_with_reasons"),
        ratio_col("groups/s / inline", "groups_per_s", over="inline"),
    ),
)

EXPERIMENT.run_if_main(__name__)
