"""Build benchmarks/eval_bfcl.jsonl: labelled groups of agent tool calls for `judge-service eval`, from the
Berkeley Function Calling Leaderboard's `simple_python` questions and their ground truth (bfcl-eval on
PyPI, Apache-2.0; the data ships in the wheel).

    .venv/bin/python benchmarks/build_eval_bfcl.py [--groups 40] [--out benchmarks/eval_bfcl.jsonl]

Each group is one BFCL question: the user's request, the function the policy was given (as the group's
`tools`; BFCL's "dict" parameters written as JSON Schema's "object"), and four answers, each a trajectory
of one assistant turn that calls a tool:
- `right`: the ground truth's call (each argument's first accepted value; an optional argument whose
  first accepted value is "" left out), label true;
- `wrong_value`: the same call with one required argument's value changed (a number plus one, a string
  replaced by another the question does not name, a list with its first item changed), label false;
- `missing`: the right call without one required argument (questions with two or more), label false;
- `wrong_tool`: the right arguments sent to a function the tools do not have, label false.
The labels follow from BFCL's own ground truth, as its AST checker reads it: no person labelled them.
The reference is the right call written as `name(arg=value, ...)`; the comparison file runs each group
with it and without it (`"reference": null`, the judge's no-reference prompts). Answers are shuffled per
group (seeded) so the right one is not always first, and named a1-a4 (the judge sees the ids); the
group's `item` (never shown to the judge) keeps the BFCL id and which answer is which.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

BFCL = "bfcl-eval==2026.3.23"
QUESTIONS = "bfcl_eval/data/BFCL_v4_simple_python.json"
ANSWERS = "bfcl_eval/data/possible_answer/BFCL_v4_simple_python.json"
HERE = Path(__file__).resolve().parent


def wheel_members() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The questions and the ground truth by id, read from the pinned wheel (downloaded, not installed)."""
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", folder, BFCL], check=True
        )
        (wheel,) = Path(folder).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            questions = [json.loads(line) for line in archive.read(QUESTIONS).decode().splitlines() if line]
            truth = [json.loads(line) for line in archive.read(ANSWERS).decode().splitlines() if line]
    return questions, {row["id"]: row["ground_truth"] for row in truth}


def schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """BFCL's parameter schema as JSON Schema ("dict" is "object", at every depth)."""
    converted = {k: schema(v) if isinstance(v, dict) else v for k, v in parameters.items()}
    if converted.get("type") == "dict":
        converted["type"] = "object"
    return converted


def right_arguments(accepted: dict[str, list[Any]]) -> dict[str, Any]:
    return {name: values[0] for name, values in accepted.items() if values and values[0] != ""}


def changed(value: Any, question: str) -> Any:
    """Another value of the same kind that the question does not name."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        for other in ("London", "blue", "2001", "none"):
            if other.lower() not in question.lower() and other != value:
                return other
    if isinstance(value, list) and value:
        return [changed(value[0], question), *value[1:]]
    if isinstance(value, dict) and value:
        first = next(iter(value))
        return {**value, first: changed(value[first], question)}
    return None


def call_turn(name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [{"role": "assistant", "content": None, "tool_calls": [call]}]


def written(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={json.dumps(v)}' for k, v in arguments.items())})"


def group(question: dict[str, Any], truth: list[dict[str, Any]], rng: random.Random) -> dict[str, Any] | None:
    """One labelled group (module docstring), or None where the question does not make four answers."""
    (function,) = question["function"]
    ((name, accepted),) = truth[0].items()
    arguments = right_arguments(accepted)
    required = [p for p in function["parameters"].get("required", []) if p in arguments]
    if not required:
        return None
    text = question["question"][0][-1]["content"]
    target = rng.choice(required)
    wrong = changed(arguments[target], text)
    if wrong is None or wrong in accepted[target]:
        return None
    answers = [
        {"id": "right", "messages": call_turn(name, arguments), "label": True},
        {"id": "wrong_value", "messages": call_turn(name, {**arguments, target: wrong}), "label": False},
        {"id": "wrong_tool", "messages": call_turn(name + "_v2", arguments), "label": False},
    ]
    if len(required) >= 2:
        missing = {k: v for k, v in arguments.items() if k != rng.choice(required)}
        answers.append({"id": "missing", "messages": call_turn(name, missing), "label": False})
    rng.shuffle(answers)
    kinds = {}  # neutral ids: the judge sees the ids, and "right" would give the label away
    for number, answer in enumerate(answers, start=1):
        kinds[f"a{number}"], answer["id"] = answer["id"], f"a{number}"
    tool = {
        "name": function["name"],
        "description": function["description"],
        "parameters": schema(function["parameters"]),
    }
    return {
        "conversation": [{"role": "user", "content": text}],
        "tools": [{"type": "function", "function": tool}],
        "reference": written(name, arguments),
        "answers": answers,
        "item": {"bfcl_id": question["id"], "kinds": kinds},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "eval_bfcl.jsonl")
    args = parser.parse_args()
    questions, truth = wheel_members()
    rng = random.Random(args.seed)
    rows = []
    for question in questions:
        made = group(question, truth[question["id"]], rng)
        if made is not None:
            rows.append(made)
        if len(rows) == args.groups:
            break
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"{len(rows)} groups, {sum(len(r['answers']) for r in rows)} answers -> {args.out}")


if __name__ == "__main__":
    main()
