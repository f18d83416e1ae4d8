"""Marks only (reasons "none"): the reply schema, parsing, expected marks located in a bare reply, the
marks-only prompts, and which groups "sample" gives reasons."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest

from judge_service.backends.base import TokenLogprobs
from judge_service.config import PACKAGED_PROMPTS
from judge_service.judging.llm.criteria import DEFAULT_CRITERIA
from judge_service.judging.llm.expected import expected_marks
from judge_service.judging.llm.mark_locations import mark_positions
from judge_service.judging.llm.parser import (
    answer_schema,
    max_output_tokens,
    output_schema,
    parse_answer,
    parse_judgement,
)
from judge_service.judging.llm.prompt import GroupContent, PromptRenderer
from judge_service.judging.llm.reasons import sample_draw, writes_reasons
from judge_service.schemas import Answer, ChatMessage

NAMES = [c.name for c in DEFAULT_CRITERIA]
COMPACT = '{"correctness":4,"helpfulness":2,"tone":3,"format":4}'


def test_the_marks_only_schema_holds_every_criterion_as_a_bare_mark_and_no_reason() -> None:
    schema = answer_schema(NAMES, 120, reasons=False)
    assert schema["required"] == NAMES and schema["additionalProperties"] is False
    for name in NAMES:
        assert schema["properties"][name] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    assert "reason" not in json.dumps(schema)
    jsonschema.validate(json.loads(COMPACT), schema)
    with_reason = {name: {"reason": "fine", "mark": 4} for name in NAMES}
    for bad in (with_reason, {**json.loads(COMPACT), "tone": 6}, {"correctness": 4}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    group = output_schema(["a1", "a2"], NAMES, 120, reasons=False)
    assert group["required"] == ["a1", "a2"]
    jsonschema.validate({"a1": json.loads(COMPACT), "a2": json.loads(COMPACT)}, group)


def test_a_marks_only_reply_needs_a_fraction_of_the_output_budget() -> None:
    with_reasons = max_output_tokens(8, 4, 60, chars_per_token=1)
    marks_only = max_output_tokens(8, 4, 60, chars_per_token=1, reasons=False)
    assert marks_only * 4 < with_reasons
    assert marks_only >= 8 * len(COMPACT) // 4  # still room for every mark of every answer


def test_marks_only_replies_are_parsed_by_criterion_with_no_reason() -> None:
    parsed = parse_answer(COMPACT, "a1", NAMES, reasons=False)
    assert parsed.complete
    assert {n: (m.mark, m.reason) for n, m in parsed.marks["a1"].items()} == {
        "correctness": (4, None),
        "helpfulness": (2, None),
        "tone": (3, None),
        "format": (4, None),
    }
    # A judge that wrote more than asked (a mark object, with a reason) still gives its marks, no reasons.
    verbose = json.dumps({n: {"reason": "x", "mark": 5} for n in NAMES})
    assert {m.reason for m in parse_answer(verbose, "a1", NAMES, reasons=False).marks["a1"].values()} == {
        None
    }
    group = parse_judgement(
        json.dumps({"a1": json.loads(COMPACT), "a2": {"correctness": 9}}), ["a1", "a2"], NAMES, reasons=False
    )
    assert set(group.marks) == {"a1"}
    assert "invalid_mark" in group.problems and "a2" in group.failures
    missing = parse_answer('{"correctness":4}', "a1", NAMES, reasons=False)
    assert missing.failures["a1"] == "criterion 'helpfulness' is missing or not an object"
    # With reasons asked for, the same compact reply is invalid: a mark without its reason.
    assert not parse_answer(COMPACT, "a1", NAMES).complete


def _tokens(text: str, spread: list[tuple[str, float]]) -> list[TokenLogprobs]:
    """One token per character; every mark digit gets the same spread."""
    digits = set(mark_positions(text, bare=True).values())
    return [
        TokenLogprobs(ch, 0.0, tuple((t, math.log(p)) for t, p in spread) if i in digits else ())
        for i, ch in enumerate(text)
    ]


def test_expected_marks_are_located_in_a_marks_only_reply() -> None:
    positions = mark_positions(COMPACT, bare=True)
    assert {path: COMPACT[at] for path, at in positions.items()} == {
        ("correctness",): "4",
        ("helpfulness",): "2",
        ("tone",): "3",
        ("format",): "4",
    }
    assert mark_positions(COMPACT) == {}  # not looked for unless the reply is marks only
    group = json.dumps({"b": {"tone": 2}, "a": {"tone": 5}})
    assert set(mark_positions(group, bare=True)) == {("b", "tone"), ("a", "tone")}
    found = expected_marks(_tokens('{"tone":4}', [("4", 0.5), ("5", 0.5)]), bare=True)
    assert found == {("tone",): pytest.approx(4.5)}


def _content() -> GroupContent:
    return GroupContent(
        conversation=[ChatMessage(role="user", content="What is the capital of France?")],
        reference="Paris.",
        answers=[Answer(id="a1", text="Paris"), Answer(id="a2", text="Lyon")],
        criteria=list(DEFAULT_CRITERIA),
        reason_max_chars=60,
    )


def test_the_marks_only_prompt_asks_for_no_reason_and_keeps_the_group_message() -> None:
    renderer = PromptRenderer(PACKAGED_PROMPTS, "judge_group")
    for decoding in ("group", "per_answer"):
        assert renderer.version_of(decoding, reasons=False) != renderer.version_of(decoding)
    inline = renderer.render(_content()).messages
    marks = renderer.render(_content(), reasons=False).messages
    assert marks[1] == inline[1]  # the group itself is shown the same way
    assert "reason" in inline[0]["content"] and "Write no reasons" in marks[0]["content"]
    per_answer = renderer.render_per_answer(_content(), reasons=False)
    assert [p.messages[1]["content"][-60:] for p in per_answer] == [
        p.messages[1]["content"][-60:] for p in renderer.render_per_answer(_content())
    ]
    question = renderer.render_explain(["a2", "a1"], 60)
    assert "a2, a1" in question and "Do not change any mark" in question
    assert renderer.explain_version("per_answer").startswith(renderer.version_of("per_answer", reasons=False))


def test_sample_gives_reasons_to_the_same_groups_every_time_at_the_rate() -> None:
    ids = [f"{i:032x}" for i in range(4000)]
    chosen = [writes_reasons("sample", i, 0.1) for i in ids]
    assert chosen == [writes_reasons("sample", i, 0.1) for i in ids]  # same ids, same groups
    assert 0.08 < sum(chosen) / len(ids) < 0.12
    assert all(0 <= sample_draw(i) < 1 for i in ids[:50])
    # A higher rate keeps every group a lower one chose (one draw per id, compared with the rate).
    higher = [writes_reasons("sample", i, 0.3) for i in ids]
    assert all(h for c, h in zip(chosen, higher, strict=True) if c)
    assert not any(writes_reasons("sample", i, 0.0) for i in ids)
    assert all(writes_reasons("inline", i, 0.0) for i in ids[:10])
    assert not any(writes_reasons("none", i, 1.0) for i in ids[:10])
