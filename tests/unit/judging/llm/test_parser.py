"""The parser against a table of real and broken judge outputs."""

from __future__ import annotations

import json

import jsonschema
import pytest

from judge_service.judging.llm.parser import output_schema, parse_answer, parse_judgement

IDS = ["a1", "a2"]
CRITERIA = ["correctness", "tone"]


def _entry(c: int, t: int) -> dict[str, dict[str, object]]:
    return {
        "correctness": {"reason": "matches the reference", "mark": c},
        "tone": {"reason": "polite", "mark": t},
    }


GOOD = {"a1": _entry(5, 4), "a2": _entry(1, 3)}

# A reply the default model (SmolLM2-135M under the JSON schema) actually wrote, whitespace and all.
REAL_SMALL_MODEL_REPLY = (
    '{\n  "a1": {\n    "correctness": \n{\n  "reason": "2",\n  "mark": 1\n},\n"tone": \n'
    '{\n  "reason": "polite",\n  "mark": 3\n}\n},\n'
    '"a2": {"correctness": {"reason": "wrong sum", "mark": 1}, "tone": {"reason": "ok", "mark": 2}}\n}'
)


@pytest.mark.parametrize(
    ("label", "text", "scored", "failed"),
    [
        ("plain object", json.dumps(GOOD), {"a1", "a2"}, set()),
        ("real small-model reply", REAL_SMALL_MODEL_REPLY, {"a1", "a2"}, set()),
        ("code fence", "```json\n" + json.dumps(GOOD) + "\n```", {"a1", "a2"}, set()),
        (
            "prose around",
            "Here are my marks:\n" + json.dumps(GOOD) + "\nHope this helps.",
            {"a1", "a2"},
            set(),
        ),
        ("wrapped in answers", json.dumps({"answers": GOOD}), {"a1", "a2"}, set()),
        (
            "list with ids",
            json.dumps([{"id": "a1", **_entry(2, 2)}, {"id": "a2", **_entry(3, 3)}]),
            {"a1", "a2"},
            set(),
        ),
        ("missing answer", json.dumps({"a1": _entry(5, 5)}), {"a1"}, {"a2"}),
        ("unknown extra id ignored", json.dumps({**GOOD, "zz": _entry(1, 1)}), {"a1", "a2"}, set()),
        ("mark out of range", json.dumps({"a1": _entry(6, 4), "a2": _entry(1, 1)}), {"a2"}, {"a1"}),
        ("mark zero", json.dumps({"a1": _entry(0, 4), "a2": _entry(1, 1)}), {"a2"}, {"a1"}),
        ("string mark accepted", json.dumps({"a1": _entry("4", 4), "a2": _entry(1, 1)}), {"a1", "a2"}, set()),  # type: ignore[arg-type]
        ("float mark 3.5 refused", json.dumps({"a1": _entry(3.5, 4), "a2": _entry(1, 1)}), {"a2"}, {"a1"}),  # type: ignore[arg-type]
        ("bool mark refused", json.dumps({"a1": _entry(True, 4), "a2": _entry(1, 1)}), {"a2"}, {"a1"}),  # type: ignore[arg-type]
        (
            "missing criterion",
            json.dumps({"a1": {"tone": {"reason": "x", "mark": 2}}, "a2": _entry(1, 1)}),
            {"a2"},
            {"a1"},
        ),
        (
            "empty reason",
            json.dumps({"a1": {**_entry(2, 2), "tone": {"reason": " ", "mark": 2}}, "a2": _entry(1, 1)}),
            {"a2"},
            {"a1"},
        ),
        (
            "duplicate ids in list",
            json.dumps(
                [{"id": "a1", **_entry(2, 2)}, {"id": "a1", **_entry(5, 5)}, {"id": "a2", **_entry(3, 3)}]
            ),
            {"a2"},
            {"a1"},
        ),
        ("truncated JSON", json.dumps(GOOD)[:-30], set(), {"a1", "a2"}),
        ("not JSON", "I think a1 is better than a2.", set(), {"a1", "a2"}),
        ("empty", "   ", set(), {"a1", "a2"}),
        ("JSON number", "42", set(), {"a1", "a2"}),
        ("entry not an object", json.dumps({"a1": 5, "a2": _entry(1, 1)}), {"a2"}, {"a1"}),
    ],
)
def test_parse_table(label: str, text: str, scored: set[str], failed: set[str]) -> None:
    parsed = parse_judgement(text, IDS, CRITERIA)
    assert set(parsed.marks) == scored, label
    assert set(parsed.failures) == failed, label
    assert parsed.complete == (not failed)
    for reason in parsed.failures.values():
        assert reason  # every failure says why


def test_marks_and_reasons_are_read_by_id() -> None:
    parsed = parse_judgement(json.dumps(GOOD), IDS, CRITERIA)
    assert parsed.marks["a1"]["correctness"].mark == 5
    assert parsed.marks["a2"]["tone"].mark == 3
    assert parsed.marks["a1"]["correctness"].reason == "matches the reference"


def test_unknown_ids_are_noted() -> None:
    parsed = parse_judgement(json.dumps({**GOOD, "zz": _entry(1, 1)}), IDS, CRITERIA)
    assert any("zz" in note for note in parsed.notes)


def test_long_reasons_are_cut_to_the_bound() -> None:
    long = {"a1": {"correctness": {"reason": "x" * 500, "mark": 3}, "tone": {"reason": "y", "mark": 3}}}
    parsed = parse_judgement(json.dumps(long), ["a1"], CRITERIA, reason_max_chars=50)
    assert len(parsed.marks["a1"]["correctness"].reason) == 50


def test_schema_accepts_good_and_refuses_bad_replies() -> None:
    schema = output_schema(IDS, CRITERIA, reason_max_chars=40)
    jsonschema.validate(GOOD, schema)
    bad = [
        {"a1": _entry(5, 4)},  # missing id
        {**GOOD, "a3": _entry(1, 1)},  # extra id
        {"a1": _entry(6, 4), "a2": _entry(1, 1)},  # out of range
        {
            "a1": {**_entry(2, 2), "tone": {"reason": "z" * 41, "mark": 2}},
            "a2": _entry(1, 1),
        },  # reason too long
    ]
    for reply in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(reply, schema)


@pytest.mark.parametrize(
    ("answer_id", "criteria"),
    [("tone", ["correctness", "tone"]), ("a1", ["answers", "tone"]), ("a1", ["results", "format"])],
)
def test_a_per_answer_reply_whose_keys_also_name_a_wrapper_is_the_answers_own(
    answer_id: str, criteria: list[str]
) -> None:
    """An answer id equal to a criterion's name, or a criterion named like a wrapper ("answers", "results"),
    made the answer's own object read as a wrapper: the answer was unscored after every retry."""
    reply = json.dumps({name: {"reason": "fine", "mark": 4} for name in criteria})
    parsed = parse_answer(reply, answer_id, criteria)
    assert parsed.complete, parsed.failures
    assert {name: mark.mark for name, mark in parsed.marks[answer_id].items()} == dict.fromkeys(criteria, 4)
