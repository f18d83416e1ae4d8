"""Graders written as code, for the tests (JUDGE_CODE_GRADERS targets): each signature, and each way a
grader can fail."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any


def mentions_fact(sample: dict[str, Any], item: dict[str, Any]) -> float:
    """rft: 1 when the answer names the item's fact, else 0."""
    return 1.0 if item["fact"].lower() in sample["output_text"].lower() else 0.0


def json_total(sample: dict[str, Any], item: dict[str, Any]) -> float:
    """rft: reads output_json; 1 when its total is the item's."""
    parsed = sample["output_json"]
    return 1.0 if isinstance(parsed, dict) and parsed.get("total") == item.get("total") else 0.0


async def async_half(sample: dict[str, Any], item: dict[str, Any]) -> float:
    await asyncio.sleep(0)
    return 0.5


def verl_match(data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any]) -> Any:
    """verl: +1 when the reference is in the answer, -1 otherwise; explanation fields beside the score."""
    found = ground_truth in solution_str
    return {"score": 1.0 if found else -1.0, "found": found, "data_source": data_source}


def shortest_wins(group: dict[str, Any]) -> list[float]:
    """group: a length penalty relative to the group (shortest 1, longest 0)."""
    lengths = [len(answer["text"]) for answer in group["answers"]]
    low, high = min(lengths), max(lengths)
    return [1.0 if high == low else (high - length) / (high - low) for length in lengths]


def by_id(group: dict[str, Any]) -> dict[str, float]:
    return {answer["id"]: 0.25 for answer in group["answers"]}


def wrong_length(group: dict[str, Any]) -> list[float]:
    return [1.0]


def raises(sample: dict[str, Any], item: dict[str, Any]) -> float:
    if "boom" in sample["output_text"]:
        raise ZeroDivisionError("no figures to divide")
    return 1.0


def hangs(sample: dict[str, Any], item: dict[str, Any]) -> float:
    if "hang" in sample["output_text"]:
        time.sleep(3600)
    return 1.0


def hangs_after_marking(sample: dict[str, Any], item: dict[str, Any]) -> float:
    """Starts `sleep <item's marker>`, seen from outside the sandbox by its command line, then never
    returns: a test knows the grader is running, and can see whether what it started is gone."""
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", item["marker"]])
    time.sleep(3600)
    return 1.0


def aborts(sample: dict[str, Any], item: dict[str, Any]) -> float:
    if "abort" in sample["output_text"]:
        os.abort()
    return 1.0


def hogs_memory(sample: dict[str, Any], item: dict[str, Any]) -> float:
    if "hog" in sample["output_text"]:
        return float(len(bytearray(4 * 2**30)))
    return 1.0


def out_of_range(sample: dict[str, Any], item: dict[str, Any]) -> float:
    return 1.5


def prints(sample: dict[str, Any], item: dict[str, Any]) -> float:
    print("graders may print; it goes to the service's stderr, not the protocol")
    return 1.0


def trivial(sample: dict[str, Any], item: dict[str, Any]) -> float:
    return 1.0
