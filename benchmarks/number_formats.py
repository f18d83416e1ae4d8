"""The numbers grader on figures in several number formats, and on the labelled GSM8K dev file.

Prints JSON for the judge_service on the import path, so that one script measures two builds side by side
(benchmarks/compare_numbers.sh runs it on an earlier commit's tree and on this one, alternating):
- `cases`: the score of each locale case (reference, answer, the score a reader expects);
- `gsm8k`: a digest of every answer's score on the dev file, each group graded as the service grades it
  (the whole group where the grader can, else answer by answer), and how many scores are 1 / 0;
- `speed`: answers graded per second over the GSM8K answers, best of `--rounds`.

    .venv/bin/python benchmarks/number_formats.py \
        --gsm8k ../shared/data/gsm8k-model-solutions/example_model_solutions.dev.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from judge_service.judging.rules.numbers import NumbersGrader
from judge_service.schemas import RuleOptions

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


def grade_group(grader: NumbersGrader, reference: str, answers: list[str], context: str) -> list[Any]:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gsm8k", type=Path, required=True, help="example_model_solutions.dev.jsonl")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    grader = NumbersGrader()
    cases = {name: grade_group(grader, ref, [answer], "")[0].score for name, ref, answer, _ in CASES}
    groups = load_gsm8k(args.gsm8k)
    scores = [g.score for q, ref, answers in groups for g in grade_group(grader, ref, answers, q)]
    answers = sum(len(a) for _, _, a in groups)
    best = 0.0
    for _ in range(args.rounds):
        started = time.perf_counter()
        for question, reference, texts in groups:
            grade_group(grader, reference, texts, question)
        best = max(best, answers / (time.perf_counter() - started))
    result = {
        "cases": cases,
        "gsm8k": {
            "answers": len(scores),
            "digest": hashlib.sha256(json.dumps(scores).encode()).hexdigest()[:16],
            "ones": scores.count(1.0),
            "zeros": scores.count(0.0),
        },
        "speed": {"answers_per_s": round(best)},
    }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
