"""What a new user waits for, timed by shell scripts on this machine: the README's quick start on a first
run (first_run.sh), and `make serve` on a fresh clone (fresh_serve.sh). Each script's output is the
result."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from benchmarks import BENCH_DIR, REPO_ROOT
from benchmarks.experiment import Experiment, Option, Outcome, option


def header(script: str) -> str:
    """The script's leading comment, as its --help."""
    lines = (BENCH_DIR / script).read_text().splitlines()[1:]
    comment = [line.removeprefix("#").removeprefix(" ") for line in lines if line.startswith("#")][
        : len(lines)
    ]
    return "\n".join(comment)


def shell(name: str, script: str, description: str, arguments: list[Option]) -> Experiment:
    """A benchmark that is a shell script: its positional arguments passed on, its output the result."""

    def run(args: Any) -> Outcome:
        command = ["bash", str(BENCH_DIR / script), *(str(getattr(args, a.flags[0])) for a in arguments)]
        done = subprocess.run(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        sys.stderr.write(done.stdout)
        table = "```\n" + done.stdout.rstrip() + "\n```"
        return Outcome({"command": command[1:], "output": done.stdout}, table, exit_code=done.returncode)

    return Experiment(name=name, description=description, doc=header(script), options=arguments, run=run)


EXPERIMENTS = (
    shell(
        "first_run",
        "first_run.sh",
        "The quick start, timed: engine ready with an empty model cache, one 4-answer group, fetched back, "
        "counters on /metrics.",
        [option("port", nargs="?", default=8123)],
    ),
    shell(
        "fresh_serve",
        "fresh_serve.sh",
        "`make serve` on a fresh clone of a revision, timed until ready: the install, the engine's start, "
        "the serving environment's size.",
        [option("rev", nargs="?", default="HEAD"), option("port", nargs="?", default=8124)],
    ),
)
