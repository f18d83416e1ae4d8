"""Group-wise judging (one call sees all N answers) against point-wise (N calls, one answer each).

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks groupwise_vs_pointwise [--groups 8] [--pairs 2]

One engine, one process. Both modes go through the service's own JudgeService.grade (in-process, no
HTTP: that cost is benchmark service_overhead's), with the same template: point-wise sends each answer
as a one-answer group (same conversation, reference and criteria). Each round submits --groups groups
at once (group-wise: --groups engine requests; point-wise: N x --groups), so the engine batches all it
can; admission is opened to 64 in flight so it does not cap point-wise. Rounds alternate
group/point, point/group, ...; the prefix cache is emptied before each round (within a round it keeps
working as in production, which helps point-wise: its N prompts share system prompt, conversation and
reference). parse_retries is 0 and the decoding `group` (one reply marks every answer it is shown), so
each judge call is exactly one engine call.

Reported per mode: prompt tokens per group (sum over its calls), completion tokens per group, groups/s,
scored answers, and the ratios group-wise / point-wise.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from benchmarks.engine import Judge, grade_groups, judge_on_engine, reset_prefix_cache
from benchmarks.experiment import Column, Experiment, Run, arm_col, col, pool, shared
from benchmarks.groups import make_groups, split_pointwise
from benchmarks.report import log, ratio

NAME = "groupwise_vs_pointwise"


async def mode_round(service: Any, groups: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """All groups at once; a group's latency is until its last call returns."""
    load, responses = await grade_groups(
        service, groups, len(groups), lambda body: [body] if mode == "groupwise" else split_pointwise(body)
    )
    answers = [a for r in responses for a in r.answers]
    return {
        "mode": mode,
        "groups": load.ok,
        "errors": load.errors[:3],
        "judge_calls": sum(r.usage.judge_calls for r in responses),
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in responses),
        "completion_tokens": sum(r.usage.completion_tokens for r in responses),
        "answers": len(answers),
        "scored_answers": sum(1 for a in answers if a.status == "scored"),
        "latencies_s": [round(x, 4) for x in load.latencies_s],
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[tuple[Judge, list[dict[str, Any]]]]:
    """One engine (admission opened to 64 in flight so it does not cap point-wise), warmed up with one
    group each way; yields it with the groups every round judges."""
    args = run.args
    groups = make_groups(
        args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME, fixed_order=True
    )
    async with judge_on_engine(
        NAME,
        reason_max_chars=args.reason_chars,
        parse_retries=0,
        decoding="group",  # group-wise: one call sees all N answers
        max_groups_in_flight=max(64, args.groups * args.answers),
    ) as judge:
        log("warm-up: one group each way (not measured)")
        for mode in ("groupwise", "pointwise"):
            await mode_round(judge.service, groups[:1], mode)
        yield judge, groups


async def measure(run: Run, mode: str, _: None) -> dict[str, Any]:
    judge, groups = run.state
    await reset_prefix_cache(judge.engine)
    return await mode_round(judge.service, groups, mode)


def per_group(header: str, key: str, digits: int = 1) -> Column:
    return Column(header, lambda cell: round(cell[key] / cell["groups"], digits))


def report(run: Run) -> None:
    args = run.args
    g, p = run.cell("groupwise"), run.cell("pointwise")
    ratios = {
        "groups_per_s_group_over_point": ratio(g["groups_per_s"], p["groups_per_s"]),
        "prompt_tokens_group_over_point": ratio(
            g["prompt_tokens"] / g["groups"], p["prompt_tokens"] / p["groups"]
        ),
        "completion_tokens_group_over_point": ratio(
            g["completion_tokens"] / g["groups"], p["completion_tokens"] / p["groups"]
        ),
    }
    pair_ratios = run.round_ratios("groupwise", "pointwise")
    run.result |= {"modes": {mode: run.cell(mode).entry for mode in ("groupwise", "pointwise")}}
    run.result |= {"ratios": ratios, "pair_ratios_groups_per_s": pair_ratios, "parse_retries": 0}
    run.notes.append(
        f"group-wise / point-wise: groups/s **{ratios['groups_per_s_group_over_point']}** (per pair "
        f"{', '.join(map(str, pair_ratios))}), prompt tokens {ratios['prompt_tokens_group_over_point']}, "
        f"completion tokens {ratios['completion_tokens_group_over_point']}. N={args.answers}, "
        f"{args.criteria} criterion(s), reasons <= {args.reason_chars} chars, {args.groups} groups at once."
    )


EXPERIMENT = Experiment(
    options=[
        *shared(groups=(8, "groups per round, all submitted at once"), pairs=2),
        *shared(answers=8, criteria=1, reason_chars=16, seed=23),
    ],
    arms=("groupwise", "pointwise"),
    rounds="pairs",
    order="alternate",
    combine=pool,
    columns=[
        arm_col("mode"),
        per_group("judge calls/group", "judge_calls", 2),
        per_group("prompt tokens/group", "prompt_tokens"),
        per_group("completion tokens/group", "completion_tokens"),
        col("groups/s", "groups_per_s"),
        col("group p50 ms", "latency.p50_ms"),
        Column("scored share", lambda cell: round(cell["scored_answers"] / max(1, cell["answers"]), 3)),
    ],
)

EXPERIMENT.run_if_main(__name__)
