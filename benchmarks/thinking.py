"""What thinking costs: the embedded judge with the stand-in thinking profile (examples/thinking/), thinking
off vs budgets, in both decodings, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks thinking [--budgets 32,128] [--levels 1,8] [--groups 6]

One engine, one process; every group goes through the service's JudgeService.grade (in-process). The
stand-in profile gives the embedded SmolLM2 a reasoning parser (two unused special tokens as markers) and a
chat template with Qwen3's `enable_thinking` switch; JUDGE_THINKING_MIN_TOKENS keeps the 135M model from
ending its sequence before the budget, so every thinking call thinks exactly its budget and then writes
its JSON (the end marker forced by vLLM's thinking_token_budget). The 135M model's thinking is noise: this
measures the machinery and its cost, not a quality gain.

Configurations: decoding (per_answer, group) x thinking (off, each budget). At each level (groups in
flight, closed loop) every configuration judges the same groups, in an order that rotates per level, the
engine's prefix cache emptied before each. Reported: group latency p50/p99, groups/s, completion and
thinking tokens per group, judge calls per group, the share of answers scored, and the ratios of each
budget's p50 over thinking off in the same decoding.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.engine import Judge, grade_groups, judge_on_engine, judged, judged_table, reset_prefix_cache
from benchmarks.experiment import (
    Experiment,
    Run,
    col,
    ints,
    option,
    ratio_col,
    shared,
)
from benchmarks.groups import make_groups

NAME = "thinking"
STAND_IN = Path(__file__).resolve().parents[1] / "examples" / "thinking"


def configurations(budgets: list[int]) -> dict[str, tuple[str, Any]]:
    """label -> (decoding, thinking field) for every decoding and thinking setting."""
    thinking: list[tuple[str, Any]] = [("off", "off")] + [(f"budget {b}", {"budget": b}) for b in budgets]
    return {
        f"{decoding} / {label}": (decoding, value)
        for decoding in ("per_answer", "group")
        for label, value in thinking
    }


async def grade(
    service: Any, groups: list[dict[str, Any]], decoding: str, thinking: Any, concurrency: int
) -> dict[str, Any]:
    load, responses = await grade_groups(
        service, groups, concurrency, lambda body: [{**body, "decoding": decoding, "thinking": thinking}]
    )
    n = max(1, load.ok)
    return {
        **judged(load, responses),
        "thinking_tokens_per_group": round(sum(r.usage.reasoning_tokens for r in responses) / n, 1),
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[Judge]:
    """One engine with the stand-in thinking profile, warmed up with one group per configuration."""
    args = run.args
    async with judge_on_engine(
        NAME,
        chat_template=STAND_IN / "smollm2_think.jinja",
        reasoning_parser="issue_think",
        reasoning_parser_plugin=STAND_IN / "smollm2_think_parser.py",
        thinking_min_tokens=max(args.budgets),
        parse_retries=0,
        max_groups_in_flight=max(args.levels) * args.answers,
        max_groups_queued=max(args.levels) * args.answers,
    ) as judge:
        warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
        for decoding, thinking in configurations(args.budgets).values():
            await grade(judge.service, warm, decoding, thinking, 1)
        yield judge


async def measure(run: Run, label: str, level: int) -> dict[str, Any]:
    judge, args = run.state, run.args
    groups = make_groups(
        max(level, args.groups), args.answers, seed=args.seed + level, run_id=NAME, fixed_order=True
    )
    decoding, thinking = configurations(args.budgets)[label]
    await reset_prefix_cache(judge.engine)
    entry = await grade(judge.service, groups, decoding, thinking, level)
    return entry | {"config": label, "decoding": decoding, "concurrency": level}


EXPERIMENT = Experiment(
    options=[
        option("--budgets", "32,128", "thinking budgets, comma-separated", type=ints),
        *shared(levels="1,8", groups=(6, "groups per level at least"), answers=4, seed=23),
    ],
    arms=lambda run: list(configurations(run.args.budgets)),
    levels="levels",
    columns=judged_table(
        "decoding / thinking",
        col("of which thinking", "thinking_tokens_per_group"),
        ratio_col("p50 / off", "latency.p50_ms", over=lambda label: label.split(" / ")[0] + " / off"),
    ),
)

EXPERIMENT.run_if_main(__name__)
