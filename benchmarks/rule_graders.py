"""Throughput of the rule graders: answers graded per second, per grader and answer length.

    .venv/bin/python benchmarks/rule_graders.py [--seconds 0.3] [--out benchmarks/out/rule_graders.json]

Texts are generated deterministically (fixed seed): business prose with figures in the formats the
numbers grader reads. Each length class has one reference and a group of answers derived from it (words
dropped or swapped, figures nudged), so similarity and numbers see realistic partial overlap.
json / json-fields answers are a sentence plus a fenced JSON object of about the same word count; label
answers are the same prose (the label cost is normalizing the answer). All graders run in one process,
side by side, each cell for at least --seconds of wall time.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judge_service.graders.base import Grade
from judge_service.graders.blend import TermGrade, blend
from judge_service.graders.registry import rule_grader
from judge_service.schemas import RuleOptions

SEED = 20240611
GROUP_SIZE = 16
LENGTHS = {"short": 20, "medium": 150, "long": 600}
WORDS = [
    "the",
    "revenue",
    "margin",
    "cost",
    "of",
    "equity",
    "debt",
    "report",
    "client",
    "quarter",
    "growth",
    "forecast",
    "budget",
    "team",
    "increased",
    "decreased",
    "compared",
    "with",
    "previous",
    "year",
    "estimate",
    "valuation",
    "risk",
    "premium",
    "market",
    "share",
    "operating",
    "cash",
    "flow",
    "capital",
    "expenditure",
    "guidance",
    "and",
    "in",
    "for",
    "to",
    "by",
    "on",
    "was",
    "is",
    "were",
    "about",
    "roughly",
]
LABELS = ["positive", "negative", "neutral"]
JSON_SCHEMA = {"type": "object", "additionalProperties": {"type": ["string", "number"]}, "minProperties": 1}


def _figure(rng: random.Random) -> str:
    value = rng.uniform(0.5, 2000)
    return rng.choice(
        [
            f"{value:.2f}%",
            f"${value:,.0f}M",
            f"{value / 1000:.3f}B",
            f"{value:.1f} million",
            f"{value:,.1f}".replace(",", "X").replace(".", ",").replace("X", ".") + " Mio.",
            f"{value:.2f}",
        ]
    )


def _prose(rng: random.Random, words: int) -> list[str]:
    """Words with a figure every 8th word, so even a short reference has figures to check."""
    return [_figure(rng) if i % 8 == 3 else rng.choice(WORDS) for i in range(words)]


def _variant(rng: random.Random, tokens: list[str]) -> str:
    """An answer that shares most of the reference: some words swapped or dropped, figures nudged."""
    out = []
    for token in tokens:
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.25:
            out.append(rng.choice(WORDS))
        elif any(c.isdigit() for c in token) and roll < 0.5:
            out.append(_figure(rng))
        else:
            out.append(token)
    return " ".join(out)


def _json_text(rng: random.Random, words: int) -> tuple[str, str]:
    fields = max(1, words // 4)
    reference = {
        f"field_{i}": rng.choice([rng.choice(WORDS), round(rng.uniform(0, 1000), 2)]) for i in range(fields)
    }
    answer = {key: (value if rng.random() < 0.7 else rng.choice(WORDS)) for key, value in reference.items()}
    wrap = "Here is the result:\n```json\n{}\n```\nLet me know if you need more."
    return wrap.format(json.dumps(answer, indent=2)), json.dumps(reference)


@dataclass(frozen=True)
class Workload:
    reference: str
    answers: list[str]
    json_reference: str
    json_answers: list[str]


def build_workloads(seed: int) -> dict[str, Workload]:
    rng = random.Random(seed)
    workloads = {}
    for name, words in LENGTHS.items():
        tokens = _prose(rng, words)
        json_pairs = [_json_text(rng, words) for _ in range(GROUP_SIZE)]
        workloads[name] = Workload(
            reference=" ".join(tokens),
            answers=[_variant(rng, tokens) for _ in range(GROUP_SIZE)],
            json_reference=json_pairs[0][1],
            json_answers=[answer for answer, _ in json_pairs],
        )
    return workloads


def _grade_all(name: str, options: RuleOptions, json_input: bool) -> Callable[[Workload], int]:
    grader = rule_grader(name)

    def run(work: Workload) -> int:
        answers = work.json_answers if json_input else work.answers
        reference = work.json_reference if json_input else work.reference
        if name == "label":
            reference = LABELS[0]
        for answer in answers:
            grader.grade(answer, reference, options)
        return len(answers)

    return run


def _blend_all(work: Workload) -> int:
    judge = TermGrade("judge", 0.5, Grade(0.75, "judge"))
    numbers = TermGrade.from_rule("numbers", 0.5, Grade(None, "reference has no figures"))
    for _ in work.answers:
        blend([judge, numbers])
    return len(work.answers)


CASES: dict[str, Callable[[Workload], int]] = {
    "similarity": _grade_all("similarity", RuleOptions(), json_input=False),
    "numbers": _grade_all("numbers", RuleOptions(), json_input=False),
    "exact": _grade_all("exact", RuleOptions(), json_input=False),
    "contains": _grade_all("contains", RuleOptions(), json_input=False),
    "label": _grade_all("label", RuleOptions(labels=LABELS), json_input=False),
    "json": _grade_all("json", RuleOptions(), json_input=True),
    "json+schema": _grade_all("json", RuleOptions(json_schema=JSON_SCHEMA), json_input=True),
    "json-fields": _grade_all("json-fields", RuleOptions(), json_input=True),
    "blend arithmetic": _blend_all,
}


def measure(run: Callable[[Workload], int], work: Workload, min_seconds: float) -> float:
    """Answers per second, after one warm-up pass (caches, regex compilation)."""
    run(work)
    graded = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < min_seconds:
        graded += run(work)
    return graded / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="minimum wall time per cell")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "rule_graders.json")
    args = parser.parse_args(argv)

    workloads = build_workloads(SEED)
    results = []
    for case, run in CASES.items():
        for length, work in workloads.items():
            rate = measure(run, work, args.seconds)
            words = sum(len(a.split()) for a in work.answers) / len(work.answers)
            results.append(
                {
                    "grader": case,
                    "length": length,
                    "answer_words": round(words),
                    "answers_per_s": round(rate),
                    "us_per_answer": round(1e6 / rate, 1),
                }
            )

    report = {
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "seed": SEED,
        "group_size": GROUP_SIZE,
        "min_seconds_per_cell": args.seconds,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    sys.stdout.write(_markdown(results) + f"\nwritten to {args.out}\n")
    return 0


def _markdown(results: list[dict[str, object]]) -> str:
    lengths = list(LENGTHS)
    words = {r["length"]: r["answer_words"] for r in results if r["grader"] == "similarity"}
    header = "| grader | " + " | ".join(f"{n} (~{words[n]} words) answers/s" for n in lengths) + " |"
    lines = [header, "|---" * (len(lengths) + 1) + "|"]
    for case in CASES:
        rates = {r["length"]: r["answers_per_s"] for r in results if r["grader"] == case}
        lines.append(f"| {case} | " + " | ".join(f"{rates[n]:,}" for n in lengths) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
