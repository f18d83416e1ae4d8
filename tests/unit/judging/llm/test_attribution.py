"""Attribution as the parser reads it and the schema asks for it: each mark's steps and first wrong step are
whole step numbers of the answer (1..its number of steps), or the reply is an output problem of that answer;
repeats are dropped in the judge's order, at most MAX_CITED_STEPS are kept; a text answer has no steps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge_service.judging.llm.criteria import DEFAULT_CRITERIA
from judge_service.judging.llm.parser import (
    MAX_CITED_STEPS,
    Mark,
    answer_schema,
    attribution_schema,
    parse_answer,
    parse_judgement,
)
from judge_service.judging.llm.scoring import Scoring, combine_orders

CRITERIA = ["correctness", "tone"]


def criterion(steps: Any = (2,), first: Any = None, mark: int = 4, **extra: Any) -> dict[str, Any]:
    return {
        "reason": "why",
        "steps": list(steps) if isinstance(steps, tuple) else steps,
        "first_wrong_step": first,
        "mark": mark,
        **extra,
    }


def reply(**answers: dict[str, Any]) -> str:
    return json.dumps(answers)


def test_steps_and_the_first_wrong_one_are_read_per_criterion() -> None:
    text = reply(
        t1={"correctness": criterion((3, 1, 3), first=3, mark=2), "tone": criterion(())},
        t2={"correctness": criterion(()), "tone": criterion(())},
    )
    parsed = parse_judgement(text, ["t1", "t2"], CRITERIA, steps={"t1": 4, "t2": 0})
    assert parsed.complete, parsed.failures
    assert parsed.marks["t1"]["correctness"] == Mark(2, "why", None, (3, 1), 3)  # repeats dropped, order kept
    assert parsed.marks["t1"]["tone"].steps == () and parsed.marks["t1"]["tone"].first_wrong is None
    assert parsed.marks["t2"]["tone"].steps == ()


def test_without_attribution_marks_carry_none() -> None:
    text = reply(t1={"correctness": {"reason": "r", "mark": 3}, "tone": {"reason": "r", "mark": 4}})
    parsed = parse_judgement(text, ["t1"], CRITERIA)
    assert parsed.marks["t1"]["correctness"] == Mark(3, "r")
    assert parsed.marks["t1"]["correctness"].steps is None


def test_at_most_the_cap_of_cited_steps_is_kept() -> None:
    many = tuple(range(1, 13))
    text = reply(t1={"correctness": criterion(many), "tone": criterion()})
    parsed = parse_judgement(text, ["t1"], CRITERIA, steps={"t1": 12})
    assert parsed.marks["t1"]["correctness"].steps == many[:MAX_CITED_STEPS]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (criterion((5,)), "names step 5; the answer has steps 1-4"),
        (criterion((0,)), "names step 0"),
        (criterion((True,)), "names step True"),
        (criterion(("2",)), "names step '2'"),
        (criterion((2.0,)), "names step 2.0"),
        (criterion(first=9), "names step 9"),
        (criterion((1, None)), "names step None"),
        (criterion((None,)), "names step None"),
        (criterion(("x" * 5000,)), "names step '" + "x" * 39 + "; the answer"),  # cut, not 5,000
        (criterion(steps="2"), "does not name its steps"),
        ({"reason": "why", "steps": [1], "mark": 3}, "does not name its steps and first wrong step"),
        ({"reason": "why", "mark": 3}, "does not name its steps"),
    ],
)
def test_a_step_the_answer_does_not_have_fails_that_answer_only(bad: dict[str, Any], message: str) -> None:
    text = reply(
        t1={"correctness": bad, "tone": criterion()}, t2={"correctness": criterion(), "tone": criterion()}
    )
    parsed = parse_judgement(text, ["t1", "t2"], CRITERIA, steps={"t1": 4, "t2": 4})
    assert "t1" not in parsed.marks and message in parsed.failures["t1"]
    assert "t2" in parsed.marks and parsed.problems == {"invalid_attribution"}


def test_a_repeated_attribution_key_is_named() -> None:
    repeated = '"steps": [1], "steps": [2], "first_wrong_step": null'
    text = '{"t1": {"correctness": {"reason": "r", ' + repeated + ', "mark": 3}}}'
    parsed = parse_judgement(text, ["t1"], ["correctness"], steps={"t1": 2})
    assert "has a repeated 'steps' or 'first_wrong_step'" in parsed.failures["t1"]


def test_a_text_answer_citing_a_step_says_it_has_none() -> None:
    text = reply(t1={"correctness": criterion((1,)), "tone": criterion(())})
    parsed = parse_judgement(text, ["t1"], CRITERIA, steps={"t1": 0})
    assert "the answer has no steps (it is text)" in parsed.failures["t1"]


def test_a_per_answer_reply_is_checked_against_its_answers_steps() -> None:
    one = json.dumps({"correctness": criterion((2,)), "tone": criterion((3,))})
    assert parse_answer(one, "t1", CRITERIA, steps=3).marks["t1"]["tone"].steps == (3,)
    assert "names step 3" in parse_answer(one, "t1", CRITERIA, steps=2).failures["t1"]


def test_the_schema_holds_the_judge_to_the_answers_steps() -> None:
    assert attribution_schema(0) == {
        "steps": {"type": "array", "maxItems": 0},
        "first_wrong_step": {"type": "null"},
    }
    three = attribution_schema(3)
    step = {"type": "integer", "minimum": 1, "maximum": 3}
    assert three["steps"]["items"] == step and three["steps"]["maxItems"] == 3
    assert three["first_wrong_step"] == {"anyOf": [step, {"type": "null"}]}
    assert attribution_schema(20)["steps"]["maxItems"] == MAX_CITED_STEPS
    schema = answer_schema(CRITERIA, 200, steps=2, binary=frozenset({"tone"}))
    assert list(schema["properties"]["correctness"]["properties"]) == [
        "reason",
        "steps",
        "first_wrong_step",
        "mark",
    ]
    assert list(schema["properties"]["tone"]["properties"]) == ["reason", "steps", "first_wrong_step", "met"]
    assert list(answer_schema(CRITERIA, 200)["properties"]["tone"]["properties"]) == ["reason", "mark"]


def test_results_show_the_attribution_and_orders_keep_the_first_orders() -> None:
    criteria = [c for c in DEFAULT_CRITERIA if c.name in CRITERIA]
    first = parse_judgement(
        reply(t1={"correctness": criterion((2,), first=2, mark=2), "tone": criterion((1,))}),
        ["t1"],
        CRITERIA,
        steps={"t1": 2},
    )
    second = parse_judgement(
        reply(t1={"correctness": criterion((1,), mark=4), "tone": criterion((2,))}),
        ["t1"],
        CRITERIA,
        steps={"t1": 2},
    )
    combined, _ = combine_orders([first, second], ["t1"], criteria)
    assert combined.marks["t1"]["correctness"].steps == (2,) and combined.marks["t1"]["correctness"].mark == 3
    grade = Scoring.of(criteria).grade(combined.marks["t1"])
    assert grade.criteria is not None
    assert grade.criteria["correctness"]["attribution"] == {"steps": [2], "first_wrong_step": 2}
    plain = Scoring.of(criteria).grade({name: Mark(3, "r") for name in CRITERIA})
    assert plain.criteria is not None and "attribution" not in plain.criteria["tone"]  # null when read
