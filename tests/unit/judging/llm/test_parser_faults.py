"""Parser faults found by the end-to-end fault tests: ambiguous keys, truncated replies, problem kinds."""

from __future__ import annotations

import json

from judge_service.judging.llm.parser import parse_judgement
from judge_service.metrics import OUTPUT_PROBLEMS

IDS = ["a1", "a2"]
CRITERIA = ["correctness", "tone"]


def _entry(mark: int) -> str:
    return json.dumps({c: {"reason": "ok", "mark": mark} for c in CRITERIA})


def test_repeated_answer_key_fails_that_answer_instead_of_last_wins() -> None:
    parsed = parse_judgement(f'{{"a1": {_entry(5)}, "a2": {_entry(3)}, "a1": {_entry(1)}}}', IDS, CRITERIA)
    assert set(parsed.marks) == {"a2"}
    assert "more than one entry" in parsed.failures["a1"]
    assert parsed.problems == {"duplicate_answer"}


def test_repeated_criterion_key_fails_that_answer() -> None:
    twice = '{"correctness": {"reason": "a", "mark": 5}, "tone": {"reason": "b", "mark": 4}, '
    twice += '"correctness": {"reason": "c", "mark": 1}}'
    parsed = parse_judgement(f'{{"a1": {twice}, "a2": {_entry(3)}}}', IDS, CRITERIA)
    assert "appears more than once" in parsed.failures["a1"]
    assert parsed.problems == {"invalid_entry"}


def test_truncated_reply_is_unreadable_not_an_inner_object() -> None:
    text = f'Here you go: {{"a1": {_entry(4)}, "a2": {{"correctness": {{"reason": "cut'
    parsed = parse_judgement(text, IDS, CRITERIA)
    assert not parsed.marks
    assert all("not valid JSON" in why for why in parsed.failures.values())
    assert parsed.problems == {"unreadable"}


def test_prose_with_balanced_brackets_before_the_json_still_parses() -> None:
    text = f'[judgement] {{"a1": {_entry(4)}, "a2": {_entry(2)}}} (done)'
    parsed = parse_judgement(text, IDS, CRITERIA)
    assert parsed.complete and parsed.marks["a2"]["tone"].mark == 2


def test_problem_kinds_are_all_declared() -> None:
    replies = [
        "nope",
        json.dumps({"a1": json.loads(_entry(4))}),
        json.dumps({"a1": 5, "a2": {"tone": {"reason": "x", "mark": 9}}, "zz": {}}),
        json.dumps({"a1": {c: {"reason": "", "mark": 3} for c in CRITERIA}, "a2": {}}),
    ]
    seen: set[str] = set()
    for text in replies:
        seen |= parse_judgement(text, IDS, CRITERIA).problems
    assert seen <= set(OUTPUT_PROBLEMS)
    assert {"unreadable", "missing_answer", "invalid_entry", "unknown_answer", "missing_reason"} <= seen
