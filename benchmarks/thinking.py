"""What thinking costs: the embedded judge with the stand-in thinking profile (examples/thinking/), thinking
off vs budgets, in both decodings, on the real engine.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.thinking [--budgets 32,128] [--levels 1,8] [--groups 6]

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

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import latency_summary, log, markdown_table, ratio, write_result
from benchmarks.servers import workdir
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest

NAME = "thinking"
STAND_IN = Path(__file__).resolve().parents[1] / "examples" / "thinking"


def configurations(budgets: list[int]) -> list[tuple[str, str, Any]]:
    """(label, decoding, thinking field) for every decoding and thinking setting."""
    thinking: list[tuple[str, Any]] = [("off", "off")] + [(f"budget {b}", {"budget": b}) for b in budgets]
    return [
        (f"{decoding} / {label}", decoding, value)
        for decoding in ("per_answer", "group")
        for label, value in thinking
    ]


async def measure(
    service: Any, groups: list[dict[str, Any]], decoding: str, thinking: Any, concurrency: int
) -> dict[str, Any]:
    async def grade(body: dict[str, Any]) -> Any:
        return await service.grade(
            JudgeRequest.model_validate({**body, "decoding": decoding, "thinking": thinking})
        )

    load = await run_load(groups, grade, concurrency=concurrency)
    responses = load.results
    answers = [a for r in responses for a in r.answers]
    n = max(1, load.ok)
    return {
        "groups": load.ok,
        "errors": load.errors[:3],
        "groups_per_s": round(load.per_second(), 4),
        "latency": latency_summary(load.latencies_s),
        "judge_calls_per_group": round(sum(r.usage.judge_calls for r in responses) / n, 2),
        "completion_tokens_per_group": round(sum(r.usage.completion_tokens for r in responses) / n, 1),
        "thinking_tokens_per_group": round(sum(r.usage.reasoning_tokens for r in responses) / n, 1),
        "scored_share": round(sum(a.status == "scored" for a in answers) / max(1, len(answers)), 4),
    }


async def _main(args: argparse.Namespace) -> int:
    levels = [int(x) for x in args.levels.split(",")]
    budgets = [int(x) for x in args.budgets.split(",")]
    configs = configurations(budgets)
    entries: list[dict[str, Any]] = []
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            chat_template=STAND_IN / "smollm2_think.jinja",
            reasoning_parser="issue_think",
            reasoning_parser_plugin=STAND_IN / "smollm2_think_parser.py",
            thinking_min_tokens=max(budgets),
            parse_retries=0,
            max_groups_in_flight=max(levels) * args.answers,
            max_groups_queued=max(levels) * args.answers,
        )
        engine = await start_engine(settings, JudgeMetrics())
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                log("warm-up: one group per configuration (not measured)")
                warm = make_groups(1, args.answers, seed=args.seed + 99, run_id=NAME, fixed_order=True)
                for _, decoding, thinking in configs:
                    await measure(service, warm, decoding, thinking, 1)
                for index, level in enumerate(levels):
                    groups = make_groups(
                        max(level, args.groups),
                        args.answers,
                        seed=args.seed + level,
                        run_id=NAME,
                        fixed_order=True,
                    )
                    shift = index % len(configs)
                    for label, decoding, thinking in configs[shift:] + configs[:shift]:
                        await reset_prefix_cache(engine)
                        entry = await measure(service, groups, decoding, thinking, level)
                        entry |= {"config": label, "decoding": decoding, "concurrency": level}
                        entries.append(entry)
                        log(
                            f"c={level} {label}: p50 {entry['latency']['p50_ms'] / 1000:.2f} s, "
                            f"{entry['thinking_tokens_per_group']} thinking tokens/group, "
                            f"scored {entry['scored_share']}"
                        )
        finally:
            await engine.close()
    return _report(args, levels, configs, entries)


def _report(
    args: argparse.Namespace,
    levels: list[int],
    configs: list[tuple[str, str, Any]],
    entries: list[dict[str, Any]],
) -> int:
    by = {(e["config"], e["concurrency"]): e for e in entries}
    order = [label for label, _, _ in configs]
    rows = []
    for e in sorted(entries, key=lambda e: (e["concurrency"], order.index(e["config"]))):
        off = by[(f"{e['decoding']} / off", e["concurrency"])]
        rows.append(
            [
                e["config"],
                e["concurrency"],
                e["groups"],
                round(e["latency"]["p50_ms"] / 1000, 2),
                round(e["latency"]["p99_ms"] / 1000, 2),
                e["groups_per_s"],
                e["judge_calls_per_group"],
                e["completion_tokens_per_group"],
                e["thinking_tokens_per_group"],
                e["scored_share"],
                ratio(e["latency"]["p50_ms"], off["latency"]["p50_ms"]),
            ]
        )
    table = markdown_table(
        [
            "decoding / thinking",
            "groups in flight",
            "groups",
            "p50 s",
            "p99 s",
            "groups/s",
            "calls/group",
            "completion tokens/group",
            "of which thinking",
            "scored",
            "p50 / off",
        ],
        rows,
    )
    write_result(NAME, {"config": vars(args), "entries": entries}, table)
    return 0 if all(not e["errors"] for e in entries) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budgets", default="32,128", help="thinking budgets, comma-separated")
    parser.add_argument("--levels", default="1,8", help="groups in flight, comma-separated")
    parser.add_argument("--groups", type=int, default=6, help="groups per level at least")
    parser.add_argument("--answers", type=int, default=4, help="N, answers per group")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
