"""The capacity guard: this working tree against a pinned earlier commit, alternately in one run, as ratios.

    .venv/bin/python -m benchmarks capacity_guard [--against 4b52f6d] [--rounds 3] [--min-ratio 1.0]
        [-- fake_capacity args, default: --levels 32 --batch-levels 1 --seconds 5 --stage-groups 300]

Runs benchmarks/fake_capacity.py on the pinned commit (checked out in a temporary git worktree, same venv)
and on this tree, in ABBA order round after round, each tree importing its own code (`python -m` puts
the tree first on sys.path, and the server it starts runs from the same tree). Prints groups/s and server
CPU per group of every round, side by side, and the ratio of the sums (now / pinned). With --min-ratio it
exits 1 when the guarded level's ratio is below it: a change to the request path that costs capacity
shows the day it lands. Run it after such a change and record its table in
benchmarks/results/capacity_guard.md.

The machines are shared: only the ratio means anything, and only within one run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks import REPO_ROOT
from benchmarks.experiment import Experiment, Outcome, option, shared
from benchmarks.report import log, markdown_table, ratio
from benchmarks.trees import pinned_tree

NAME = "capacity_guard"
PINNED = "4b52f6d"  # the capacity of RESULTS section 4 (results/fake_capacity.md); the goal lost half of it
DEFAULT_ARGS = ["--levels", "32", "--batch-levels", "1", "--seconds", "5", "--stage-groups", "300"]
IN_PROCESS = "service.grade, whole path (CPU, all threads)"


def capacity(tree: Path, args: list[str]) -> dict[str, Any]:
    """One fake_capacity run with the tree's own code; its result file."""
    subprocess.run(
        [sys.executable, "-m", "benchmarks.fake_capacity", *args],
        cwd=tree,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads((tree / "benchmarks" / "out" / "fake_capacity.json").read_text())
    return result


def figures(result: dict[str, Any]) -> dict[str, tuple[float, float | None]]:
    """Row label -> (groups/s, server CPU ms per group) of one run; the in-process grade as its own row."""
    rows: dict[str, tuple[float, float | None]] = {
        f"{level['endpoint']}, {level['concurrency']} in flight": (
            level["groups_per_s"],
            level["server_cpu_ms_per_group"],
        )
        for level in result["levels"]
    }
    stages = result.get("stages", {})
    cpu = stages.get("stage_ms_per_group", {}).get(IN_PROCESS)
    if "service_grade_groups_per_s_in_process" in stages:
        rows["in-process grade (no HTTP)"] = (stages["service_grade_groups_per_s_in_process"], cpu)
    return rows


def compare(runs: dict[str, list[dict[str, Any]]], ref: str) -> tuple[list[dict[str, Any]], str]:
    """Per row: every round's figures of both trees and the ratios of their sums."""
    pinned = [figures(r) for r in runs["pinned"]]
    now = [figures(r) for r in runs["now"]]
    rows: list[dict[str, Any]] = []
    for label in pinned[0]:
        if not all(label in f for f in (*pinned, *now)):
            continue
        before = [f[label] for f in pinned]
        after = [f[label] for f in now]
        cpu_before = [c for _, c in before if c is not None]
        cpu_after = [c for _, c in after if c is not None]
        rows.append(
            {
                "row": label,
                "pinned_groups_per_s": [g for g, _ in before],
                "now_groups_per_s": [g for g, _ in after],
                "ratio": ratio(sum(g for g, _ in after), sum(g for g, _ in before)),
                "pinned_cpu_ms_per_group": cpu_before,
                "now_cpu_ms_per_group": cpu_after,
                "cpu_ratio": ratio(sum(cpu_after), sum(cpu_before)) if cpu_before and cpu_after else None,
            }
        )
    table = markdown_table(
        [
            "endpoint",
            f"{ref}: groups/s",
            "now: groups/s",
            "now / pinned",
            f"{ref}: CPU ms/group",
            "now: CPU ms/group",
            "CPU now / pinned",
        ],
        [
            [
                r["row"],
                ", ".join(f"{g:,.0f}" for g in r["pinned_groups_per_s"]),
                ", ".join(f"{g:,.0f}" for g in r["now_groups_per_s"]),
                f"**{r['ratio']:.2f}**",
                ", ".join(f"{c:.3g}" for c in r["pinned_cpu_ms_per_group"]),
                ", ".join(f"{c:.3g}" for c in r["now_cpu_ms_per_group"]),
                "" if r["cpu_ratio"] is None else f"{r['cpu_ratio']:.2f}",
            ]
            for r in rows
        ],
    )
    return rows, table


def run(args: Any) -> Outcome:
    capacity_args = args.capacity_args or DEFAULT_ARGS
    runs: dict[str, list[dict[str, Any]]] = {"pinned": [], "now": []}
    with pinned_tree(args.against) as pinned:
        trees = {"pinned": pinned, "now": REPO_ROOT}
        for round_index in range(args.rounds):
            order = ["pinned", "now"] if round_index % 2 == 0 else ["now", "pinned"]
            for side in order:
                log(f"round {round_index + 1}/{args.rounds}: {args.against if side == 'pinned' else 'now'}")
                runs[side].append(capacity(trees[side], capacity_args))
    rows, table = compare(runs, args.against)
    guarded = next((r for r in rows if r["row"] == args.guard), None)
    result = {"capacity_args": capacity_args, "rows": rows, "guarded": guarded, "runs": runs}
    if args.min_ratio is not None and (guarded is None or guarded["ratio"] < args.min_ratio):
        found = "no such row" if guarded is None else f"{guarded['ratio']:.2f}"
        log(f"capacity guard: {args.guard} is {found} of {args.against}, below {args.min_ratio}")
        return Outcome(result, table, exit_code=1)
    return Outcome(result, table)


EXPERIMENT = Experiment(
    options=[
        option("--against", PINNED, "the pinned earlier commit (any git ref)"),
        *shared(rounds=(3, "rounds; each runs both trees (ABBA order)")),
        option("--min-ratio", help="exit 1 when the guarded row's ratio is below this", type=float),
        option("--guard", "POST /v1/judge, 32 in flight", "the row --min-ratio applies to"),
        option("capacity_args", help="fake_capacity's arguments (after --)", nargs="*"),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
