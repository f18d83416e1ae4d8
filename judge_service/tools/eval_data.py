"""Labelled data for `judge-service eval`: groups whose answers carry labels, in two formats.

`labelled` (one JSON object per line): a judge request whose answers carry a `label` each, true/false
(correct or not) or a number (a grade, higher is better):

    {"conversation": [...], "reference": "...", "answers": [{"id": "a", "text": "...", "label": true}, ...]}

Any other request field may ride along (criteria, options, grader); the configuration's fields override
them. `gsm8k-solutions` is the model-solutions file of openai/grade-school-math
(`grade_school_math/data/example_model_solutions.jsonl`, MIT licence): each line's question becomes the
user message, its ground truth the reference, and its four model solutions the answers (ids
`6b_finetuning`, `6b_verification`, `175b_finetuning`, `175b_verification`), labelled by `is_correct`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from judge_service.quality.evaluation import Label

DataFormat = Literal["labelled", "gsm8k-solutions"]
FORMATS: tuple[DataFormat, ...] = ("labelled", "gsm8k-solutions")


@dataclass(frozen=True)
class LabelledGroup:
    index: int  # the line's place among the file's groups, from 0
    request: dict[str, Any]  # a judge request without labels
    labels: dict[str, Label]  # answer id -> label


def read_groups(
    path: Path, data_format: DataFormat, *, limit: int | None = None, only_mixed: bool = False
) -> list[LabelledGroup]:
    """The file's groups in order (with `only_mixed`, those whose labels differ: where a ranking can be
    checked), at most `limit`; ValueError naming the line for one that cannot be read. A group keeps its
    index in the file either way."""
    reader = _labelled if data_format == "labelled" else _gsm8k_solution
    groups: list[LabelledGroup] = []
    for index, (number, row) in enumerate(_rows(path)):
        if limit is not None and len(groups) >= limit:
            break
        try:
            request, labels = reader(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{number}: not a {data_format} group: {exc}") from exc
        if only_mixed and len(set(labels.values())) < 2:
            continue
        groups.append(LabelledGroup(index, request, labels))
    return groups


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: a group is a JSON object")
            yield number, row


def _labelled(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Label]]:
    answers, labels = [], {}
    for answer in row["answers"]:
        label = answer["label"]
        if not isinstance(label, bool | int | float):
            raise ValueError(f"answer {answer.get('id')!r}: a label is true, false or a number")
        labels[str(answer["id"])] = label if isinstance(label, bool) else float(label)
        answers.append({k: v for k, v in answer.items() if k != "label"})
    return {**row, "answers": answers}, labels


def _gsm8k_solution(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Label]]:
    answers: list[dict[str, str]] = []
    labels: dict[str, Label] = {}
    for name, solution in row.items():
        if isinstance(solution, dict) and "solution" in solution:
            answers.append({"id": name, "text": solution["solution"]})
            labels[name] = bool(solution["is_correct"])
    if not answers:
        raise ValueError("no model solutions")
    request = {
        "conversation": [{"role": "user", "content": row["question"]}],
        "reference": row["ground_truth"],
        "answers": answers,
    }
    return request, labels
