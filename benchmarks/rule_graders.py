"""Throughput of the rule graders: answers graded per second, per grader and answer length.

    .venv/bin/python benchmarks/rule_graders.py [--seconds 0.3] [--out benchmarks/out/rule_graders.json]

Texts are generated deterministically (fixed seed): business prose with figures in the formats the
numbers grader reads. Each length class has one reference and a group of answers derived from it (words
dropped or swapped, figures nudged), so similarity and numbers see realistic partial overlap.
json / json-fields answers are a sentence plus a fenced JSON object of about the same word count; label
answers are the same prose (the label cost is normalizing the answer). All graders run in one process,
side by side, each cell for at least --seconds of wall time.

A second table times adversarial answers at the size limit (20,000 characters, the most a request may
carry): the inputs that make a grader work hardest (long runs of digit groups for numbers, long texts on
both sides for similarity, deep JSON). Rule graders run on the event loop, so this is how long one such
answer can hold up every other request; x64 is a whole group of them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judge_service.judging.base import Grade
from judge_service.judging.blend import TermGrade, blend
from judge_service.judging.registry import rule_grader
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


MAX_CHARS = 20_000  # schemas.MAX_TEXT_CHARS


def _adversarial() -> dict[str, tuple[str, str, str, RuleOptions]]:
    """name -> (grader, reference, answer, options), each text at the size limit."""
    rng = random.Random(SEED)
    prose = " ".join(rng.choice(WORDS) for _ in range(MAX_CHARS // 4))[:MAX_CHARS]
    other = " ".join(rng.choice(WORDS) for _ in range(MAX_CHARS // 4))[:MAX_CHARS]
    figures = "WACC ~ 9.91%; cost of equity 10.34%; EV ~ $1,705M."
    nested = ('{"a":' * 2000 + "1" + "}" * 2000)[:MAX_CHARS]
    return {
        "numbers: '234 234 ...' (space groups)": (
            "numbers",
            figures,
            ("234 " * 5000)[:MAX_CHARS],
            RuleOptions(),
        ),
        "numbers: '234' + no-break space, repeated": (
            "numbers",
            figures,
            ("234\u00a0" * 5000)[:MAX_CHARS],
            RuleOptions(),
        ),
        "numbers: '1'234'234 ...' (apostrophes)": (
            "numbers",
            figures,
            ("1" + "'234" * 5000)[:MAX_CHARS],
            RuleOptions(),
        ),
        "numbers: '1.5 ' x 4,000 (many figures)": (
            "numbers",
            figures,
            ("1.5 " * 5000)[:MAX_CHARS],
            RuleOptions(),
        ),
        "similarity: 20,000-char reference and answer": ("similarity", prose, other, RuleOptions()),
        "json-fields: JSON nested 2,000 deep": ("json-fields", '{"a": 1}', nested, RuleOptions()),
        "contains: 20,000 chars on both sides": ("contains", prose, other, RuleOptions()),
    }


def worst_case_ms(grader: str, reference: str, answer: str, options: RuleOptions) -> float:
    """Best of three: the cost of the input, not of a noisy neighbour."""
    graded = rule_grader(grader)
    times = []
    for _ in range(3):
        started = time.perf_counter()
        # A refusal (e.g. no JSON in the reference) is also an outcome; its cost is what counts.
        with contextlib.suppress(ValueError):
            graded.grade(answer, reference, options)
        times.append(time.perf_counter() - started)
    return min(times) * 1000


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

    worst = [
        {"input": name, "grader": grader, "ms_per_answer": round(worst_case_ms(grader, ref, ans, opts), 2)}
        for name, (grader, ref, ans, opts) in _adversarial().items()
    ]

    report = {
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "seed": SEED,
        "group_size": GROUP_SIZE,
        "min_seconds_per_cell": args.seconds,
        "results": results,
        "worst_case": worst,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    worst_table = "\n| adversarial answer (20,000 chars) | ms per answer | x64 answers, s |\n|---|---|---|\n"
    worst_table += "".join(
        f"| {w['input']} | {w['ms_per_answer']:,} | {w['ms_per_answer'] * 64 / 1000:.2f} |\n" for w in worst
    )
    sys.stdout.write(_markdown(results) + worst_table + f"\nwritten to {args.out}\n")
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
