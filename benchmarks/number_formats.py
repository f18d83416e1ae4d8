"""The numbers grader on figures in several number formats, and on the labelled GSM8K dev file; with
--against, an earlier commit's judge_service and this tree's side by side.

    .venv/bin/python -m benchmarks number_formats \\
        --gsm8k ../shared/data/gsm8k-model-solutions/example_model_solutions.dev.jsonl [--against 11ef8eb]

Measured per judge_service:
- `cases`: the score of each locale case (reference, answer, the score a reader expects);
- `gsm8k`: a digest of every answer's score on the dev file, each group graded as the service grades it
  (the whole group where the grader can, else answer by answer), and how many scores are 1 / 0;
- `speed`: answers graded per second over the GSM8K answers, best of `--rounds`.

With --against REF (benchmarks/compare_numbers.sh), REF is checked out in a temporary git worktree and
each round runs this benchmark's own code in a child process twice, once with REF's judge_service first
on the path and once with this tree's; reported: the locale cases of both, whether the GSM8K scores are
the same, and answers/s (best of each side's rounds).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks import REPO_ROOT
from benchmarks.experiment import Column, Experiment, Run, arm_col, col, option
from benchmarks.report import markdown_table
from benchmarks.trees import pinned_tree

NAME = "number_formats"
NOW = "this tree"

# (case, reference, answer, the score a reader of that language expects)
CASES: list[tuple[str, str, str, float]] = [
    ("de: the guide's example", "Der Unternehmenswert beträgt 1.705M.", "Der Wert liegt bei 1,705B.", 1.0),
    ("de: price with €", "Der Preis ist 1.250 €.", "Er kostet 1250 Euro.", 1.0),
    ("de: Mio. against grouped", "Wir rechnen mit 0,5 Mio. Euro.", "Es sind 500.000 Euro.", 1.0),
    ("de: pieces", "Die Lieferung umfasst 12.500 Stück.", "Es sind 12500 Stück.", 1.0),
    ("de: 1,000x too low (price)", "Der Preis ist 1.250 €.", "Er kostet 1,25 Euro.", 0.0),
    ("de: 1,000x too low (pieces)", "Die Lieferung umfasst 12.500 Stück.", "Es sind 12,5 Stück.", 0.0),
    ("en: the guide's example", "The enterprise value is 1,705M.", "The value is 1.705B.", 1.0),
    ("en: price", "The price is 1,250 €.", "It costs 1250 euros.", 1.0),
    ("en: million against grouped", "We expect 0.5 million euros.", "It is 500,000 euros.", 1.0),
    ("en: pieces", "The delivery is 12,500 pieces.", "It is 12500 pieces.", 1.0),
    ("en: 1,000x too low", "The price is 1,250 dollars.", "It costs 1.25 dollars.", 0.0),
    ("de reference, unambiguous en answer", "Der Wert ist 1.705,5 Euro.", "The value is 1,705.5 euros.", 1.0),
    ("fr: spaces group thousands", "Le prix est de 1 705,5 euros.", "Il coûte 1705,5 euros.", 1.0),
    ("fr: 1,000x too high", "Le prix est de 1,705 euros.", "Il coûte 1705 euros.", 0.0),
    ("ch: apostrophes group", "Der Preis beträgt 1'705.50 CHF.", "Er kostet 1705.5 CHF.", 1.0),
    ("nl: decimal comma", "De prijs is 2.499 euro voor het pakket.", "Het kost 2499 euro.", 1.0),
]


def grade_group(grader: Any, reference: str, answers: list[str], context: str) -> list[Any]:
    from judge_service.schemas import RuleOptions

    group = getattr(grader, "grade_group", None)
    if group is not None:  # the service grades the whole group
        return list(group(answers, reference, context, RuleOptions()))
    return [grader.grade(answer, reference, RuleOptions()) for answer in answers]


def load_gsm8k(path: Path) -> list[tuple[str, str, list[str]]]:
    groups = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        answers = [v["solution"] for k, v in row.items() if isinstance(v, dict) and "solution" in v]
        groups.append((row["question"], row["ground_truth"], answers))
    return groups


def grade_all(gsm8k: Path, rounds: int, tree: Path | None) -> dict[str, Any]:
    """The cases, the GSM8K scores' digest and the speed, with the judge_service of `tree` (imported
    here, first on the path) or the one installed."""
    if tree is not None:
        sys.path.insert(0, str(tree))
    from judge_service.judging.rules.numbers import NumbersGrader

    grader = NumbersGrader()
    cases = {name: grade_group(grader, ref, [answer], "")[0].score for name, ref, answer, _ in CASES}
    groups = load_gsm8k(gsm8k)
    scores = [g.score for q, ref, answers in groups for g in grade_group(grader, ref, answers, q)]
    answers = sum(len(a) for _, _, a in groups)
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for question, reference, texts in groups:
            grade_group(grader, reference, texts, question)
        best = max(best, answers / (time.perf_counter() - started))
    return {
        "cases": cases,
        "gsm8k": {
            "answers": len(scores),
            "digest": hashlib.sha256(json.dumps(scores).encode()).hexdigest()[:16],
            "ones": scores.count(1.0),
            "zeros": scores.count(0.0),
        },
        "speed": {"answers_per_s": round(best)},
    }


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[dict[str, Path | None]]:
    """The judge_service each arm grades with: REF's worktree and this tree's, or the one installed."""
    if run.args.against is None:
        yield {NOW: run.args.tree}
        return
    with pinned_tree(run.args.against) as pinned:
        yield {run.args.against: pinned, NOW: REPO_ROOT}


def in_child(args: Any, tree: Path) -> dict[str, Any]:
    """One round in a child process whose judge_service is the tree's (this benchmark's code is this
    tree's either way)."""
    with tempfile.TemporaryDirectory(prefix="bench-numbers-") as out:
        command = [sys.executable, "-m", "benchmarks", NAME, "--gsm8k", str(args.gsm8k), "--rounds", "1"]
        command += ["--tree", str(tree), "--out-dir", out]
        child = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
        if child.returncode != 0:
            raise RuntimeError(f"grading with {tree} failed:\n{child.stderr[-2000:]}")
        entry: dict[str, Any] = json.loads((Path(out) / f"{NAME}.json").read_text())["entries"][0]
    return {k: entry[k] for k in ("cases", "gsm8k", "speed")}


def measure(run: Run, side: str, _: None) -> dict[str, Any]:
    tree = run.state[side]
    if run.args.against is None:
        return grade_all(run.args.gsm8k, run.args.rounds, tree)
    return in_child(run.args, tree)


def combine(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The first round's scores (they do not change), the best round's speed."""
    return rounds[0] | {"speed": {"answers_per_s": max(r["speed"]["answers_per_s"] for r in rounds)}}


def report(run: Run) -> None:
    sides = list(run.state)
    cells = {side: run.cell(side) for side in sides}
    rows = [
        [name, f"{expected:g}", *(f"{cells[side]['cases'][name]:g}" for side in sides)]
        for name, _, _, expected in CASES
    ]
    run.notes.insert(0, markdown_table(["case", "expected", *sides], rows))
    digests = {cell["gsm8k.digest"] for cell in cells.values()}
    if len(sides) > 1:
        run.notes.append(
            f"GSM8K dev: scores {'identical' if len(digests) == 1 else 'DIFFERENT'} on both sides"
        )


EXPERIMENT = Experiment(
    options=[
        option("--gsm8k", type=Path, required=True, help="example_model_solutions.dev.jsonl"),
        option("--rounds", 3),
        option("--against", help="an earlier commit (any git ref) to grade with beside this tree"),
        option("--tree", type=Path, help="grade with this tree's judge_service (the runs of --against)"),
    ],
    arms=lambda run: list(run.state),
    rounds=lambda run: 1 if run.args.against is None else run.args.rounds,
    order="fixed",
    combine=combine,
    progress=lambda e: f"{e['speed']['answers_per_s']} answers/s, GSM8K digest {e['gsm8k']['digest']}",
    columns=[
        arm_col("judge_service"),
        col("GSM8K answers", "gsm8k.answers"),
        col("scores 1", "gsm8k.ones"),
        col("scores 0", "gsm8k.zeros"),
        col("digest", "gsm8k.digest"),
        Column("answers/s (best round)", lambda cell: cell["speed.answers_per_s"]),
    ],
)

EXPERIMENT.run_if_main(__name__)
