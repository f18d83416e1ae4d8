"""The capacity guard in instructions: what a request executes, counted by callgrind, this tree against a
pinned commit.

    .venv/bin/python -m benchmarks instruction_guard [--against 4b52f6d] [--groups 300] [--max-ratio 1.02]

Groups/s on a shared machine spread by 25% between rounds of one tree (results/capacity_guard.md,
section 35), so a change that costs 3% cannot be seen in them. Instructions can: valgrind's callgrind
counts what the process executes, the same for the same code and input, nearly whatever else the machine
runs (work the app does by the clock, and a busier machine stretches the clock, is the rest). Each tree
runs benchmarks/asgi_driver.py (its own app in process through ASGI, the fake judge, the same groups for
every tree, 8 in flight) twice under callgrind, W warm-up groups then N, and W then 4N; the difference
over 3N is the instructions of one POST /v1/judge, start-up and imports left out. Instructions are not
time (a cache miss costs more than an add), but on one path of Python code they move together; the
wall-clock guard (capacity_guard) stays the measure of groups/s. The guarded figure is the main thread's
(the event loop's, which bounds a process's groups/s); all threads' is shown beside it (the store's
writer thread commits each judgement, in C mostly, beside the loop). With --max-ratio it exits 1 when
this tree needs more than that times the pinned tree's main-thread instructions per group.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import BENCH_DIR, REPO_ROOT
from benchmarks.capacity_guard import PINNED
from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.report import log, markdown_table
from benchmarks.trees import pinned_tree

DRIVER = BENCH_DIR / "asgi_driver.py"
WARMUP = 200
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")
_TOTALS = re.compile(r"^totals:\s*(\d+)", re.M)


def instructions(tree: Path, groups: int, in_flight: int, warmup: int = WARMUP) -> tuple[int, int]:
    """Instructions callgrind counts for the driver in `tree` (`warmup` groups, then `groups`): on the
    main thread (the event loop's, where a request's work is done and capacity is bound) and on all."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                f"--callgrind-out-file={out}/callgrind.out",
                sys.executable,
                str(DRIVER),
                str(warmup),
                str(groups),
                str(in_flight),
            ],
            cwd=tree,
            env=defaults_env(tree),
            capture_output=True,
            text=True,
            check=False,
        )
        collected = _COLLECTED.search(done.stderr)
        main = Path(out, "callgrind.out-01")
        totals = _TOTALS.search(main.read_text()) if main.exists() else None
        if done.returncode != 0 or collected is None or totals is None:
            raise RuntimeError(f"the driver failed in {tree} (exit {done.returncode}): {done.stderr[-2000:]}")
        return int(totals.group(1)), int(collected.group(1))


def defaults_env(tree: Path) -> dict[str, str]:
    """This environment without JUDGE_* settings (both trees run on their defaults), the tree first on
    the import path."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("JUDGE_")}
    return {**kept, "PYTHONPATH": str(tree)}


def per_group(tree: Path, groups: int, in_flight: int) -> dict[str, Any]:
    """Instructions of one group in `tree`, main thread and all threads: the runs of N and 4N groups
    differ by 3N groups."""
    small, large = instructions(tree, groups, in_flight), instructions(tree, 4 * groups, in_flight)
    return {
        "runs": {groups: small, 4 * groups: large},
        "main_thread_per_group": round((large[0] - small[0]) / (3 * groups)),
        "all_threads_per_group": round((large[1] - small[1]) / (3 * groups)),
    }


def run(args: Any) -> Outcome:
    if shutil.which("valgrind") is None:
        raise SystemExit("instruction_guard needs valgrind: apt-get install valgrind")
    counts: dict[str, dict[str, Any]] = {}
    with pinned_tree(args.against) as pinned:
        for side, tree in ((args.against, pinned), ("now", REPO_ROOT)):
            log(f"{side}: {args.groups} and {4 * args.groups} groups under callgrind ...")
            counts[side] = per_group(tree, args.groups, args.in_flight)
    pinned, now = counts[args.against], counts["now"]
    before, after = pinned["main_thread_per_group"], now["main_thread_per_group"]
    result = {
        "against": args.against,
        "groups": args.groups,
        "in_flight": args.in_flight,
        "counts": counts,
        "ratio": after / before,
    }
    table = markdown_table(
        [
            "POST /v1/judge, in process",
            f"{args.against}: instructions/group",
            "now: instructions/group",
            "now / pinned",
        ],
        [
            [
                "main thread (the event loop)",
                f"{before:,}",
                f"{after:,}",
                f"**{after / before:.3f}**",
            ],
            [
                "all threads (the store's writer too)",
                f"{pinned['all_threads_per_group']:,}",
                f"{now['all_threads_per_group']:,}",
                f"{now['all_threads_per_group'] / pinned['all_threads_per_group']:.3f}",
            ],
        ],
    )
    if args.max_ratio is not None and after / before > args.max_ratio:
        log(f"instruction guard: {after / before:.3f} of {args.against}'s, above {args.max_ratio}")
        return Outcome(result, table, exit_code=1)
    return Outcome(result, table)


EXPERIMENT = Experiment(
    options=[
        option("--against", PINNED, "the pinned earlier commit (any git ref)"),
        option("--groups", 300, "N: the runs judge N and 4N groups after the warm-up"),
        option(
            "--in-flight", 8, "requests in flight (1: one at a time, every request pays a loop turn alone)"
        ),
        option(
            "--max-ratio",
            help="exit 1 when now needs more than this times the pinned instructions",
            type=float,
        ),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
