"""Checklist items (binary criteria): their schema, what the parser reads, the probability of "met" from
log-probabilities, and how items of each kind, pitfalls included, make an answer's score."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from judge_service.backends.base import TokenLogprobs
from judge_service.judging.llm.criteria import DEFAULT_CRITERIA, criterion_config
from judge_service.judging.llm.expected import expected_marks
from judge_service.judging.llm.parser import answer_schema, output_schema, parse_answer, parse_judgement
from judge_service.judging.llm.rubric_writer import parse_rubric, rubric_schema
from judge_service.judging.llm.scoring import Weighing
from judge_service.schemas import Criterion as C
from judge_service.schemas import JudgeRequest, RegradeRequest


def answer_score(scores: dict[str, float], criteria: list[C]) -> float:
    return Weighing.of(criteria).score(scores)


def item(name: str, kind: str | None = None, weight: float | None = None) -> C:
    return C(name=name, description=f"does {name}", scale="binary", kind=kind, weight=weight)  # type: ignore[arg-type]


def scale(name: str, weight: float | None = None) -> C:
    return C(name=name, description=name, mark_1="bad", mark_5="good", weight=weight)


def test_binary_items_hold_met_where_marks_hold_a_mark_in_both_reply_forms() -> None:
    schema = answer_schema(["fact", "tone"], 60, binary=frozenset({"fact"}))
    fact, tone = schema["properties"]["fact"], schema["properties"]["tone"]
    assert fact["properties"]["met"] == {"type": "boolean"} and fact["required"] == ["reason", "met"]
    assert tone["properties"]["mark"]["enum"] == [1, 2, 3, 4, 5]
    bare = output_schema(["a"], ["fact", "tone"], 60, reasons=False, binary=frozenset({"fact"}))
    assert bare["properties"]["a"]["properties"] == {
        "fact": {"type": "boolean"},
        "tone": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    }


def test_the_parser_reads_met_as_one_or_zero_and_refuses_a_mark_for_an_item() -> None:
    binary = frozenset({"fact"})
    text = (
        '{"a": {"fact": {"reason": "gives 42", "met": true}, "tone": {"reason": "ok", "mark": 4}},'
        ' "b": {"fact": {"reason": "gives 41", "met": false}, "tone": {"reason": "ok", "mark": 2}},'
        ' "c": {"fact": {"reason": "x", "mark": 5}, "tone": {"reason": "ok", "mark": 2}}}'
    )
    parsed = parse_judgement(text, ["a", "b", "c"], ["fact", "tone"], binary=binary)
    assert parsed.marks["a"]["fact"].mark == 1 and parsed.marks["b"]["fact"].mark == 0
    assert parsed.marks["a"]["tone"].mark == 4
    assert "met None" in parsed.failures["c"] and "true or false" in parsed.failures["c"]
    bare = parse_answer('{"fact": "yes", "tone": 3}', "a", ["fact", "tone"], reasons=False, binary=binary)
    assert bare.marks["a"]["fact"].mark == 1
    wrong = parse_answer('{"fact": "maybe", "tone": 3}', "a", ["fact", "tone"], reasons=False, binary=binary)
    assert "expected true or false" in wrong.failures["a"]


def test_the_probability_of_met_comes_from_the_tokens_true_and_false() -> None:
    tokens = [
        TokenLogprobs('{"fact": {"reason": "gives 42", "met": ', 0.0, ()),
        TokenLogprobs(
            "true", math.log(0.7), (("true", math.log(0.7)), ("false", math.log(0.2)), ("t", -9.0))
        ),
        TokenLogprobs('}, "tone": {"reason": "ok", "mark": ', 0.0, ()),
        TokenLogprobs("4", math.log(0.5), (("4", math.log(0.5)), ("5", math.log(0.5)))),
        TokenLogprobs("}}", 0.0, ()),
    ]
    found = expected_marks(tokens)
    assert found[("fact",)] == pytest.approx((0.7 + math.exp(-9.0)) / (0.9 + math.exp(-9.0)))
    assert found[("tone",)] == pytest.approx(4.5)
    bare = [
        TokenLogprobs('{"fact":', 0.0, ()),
        TokenLogprobs("false", math.log(0.6), (("false", math.log(0.6)), ("true", math.log(0.4)))),
        TokenLogprobs("}", 0.0, ()),
    ]
    assert expected_marks(bare, bare=True)[("fact",)] == pytest.approx(0.4)


def test_kinds_set_default_weights_and_a_met_pitfall_lowers_the_score() -> None:
    rubric = [item("must", "essential"), item("should", "important"), item("nice", "optional")]
    pitfall = item("wrong_total", "pitfall")
    assert [c.effective_weight for c in [*rubric, pitfall]] == [1.0, 0.7, 0.3, 0.9]
    assert item("x", "optional", weight=5.0).effective_weight == 5.0
    all_met = {"must": 1.0, "should": 1.0, "nice": 1.0, "wrong_total": 0.0}
    assert answer_score(all_met, [*rubric, pitfall]) == 1.0
    # Essential and important met, the pitfall hit: (1 + 0.7 - 0.9) / 2.0.
    hit = {"must": 1.0, "should": 1.0, "nice": 0.0, "wrong_total": 1.0}
    assert answer_score(hit, [*rubric, pitfall]) == pytest.approx(0.4)
    # Only the pitfall: clipped at 0, never below.
    assert (
        answer_score({"must": 0.0, "should": 0.0, "nice": 0.0, "wrong_total": 1.0}, [*rubric, pitfall]) == 0
    )
    # Probabilities of met count as they are (score_from expected).
    assert answer_score({"must": 0.5, "wrong_total": 0.5}, [rubric[0], pitfall]) == pytest.approx(0.05)


def test_mixed_scales_blend_in_one_weighted_mean() -> None:
    criteria = [scale("style", weight=1.0), item("fact", "essential")]
    assert answer_score({"style": 0.75, "fact": 1.0}, criteria) == pytest.approx(0.875)


def test_criteria_that_cannot_be_scored_are_refused_saying_what_to_fix() -> None:
    with pytest.raises(ValidationError, match="needs mark_1 and mark_5"):
        C(name="x", description="d")
    with pytest.raises(ValidationError, match="mark_1 and mark_5 are for scale '1-5'"):
        C(name="x", description="d", scale="binary", mark_1="a", mark_5="b")
    with pytest.raises(ValidationError, match="kind 'pitfall' needs scale 'binary'"):
        C(name="x", description="d", mark_1="a", mark_5="b", kind="pitfall")
    only_pitfalls = [item("p", "pitfall").model_dump()]
    base = {
        "conversation": [{"role": "user", "content": "q"}],
        "reference": "r",
        "answers": [{"id": "a", "text": "t"}],
    }
    with pytest.raises(ValidationError, match="at least one that is not a pitfall"):
        JudgeRequest.model_validate({**base, "criteria": only_pitfalls})
    with pytest.raises(ValidationError, match="criteria or a rubric, not both"):
        RegradeRequest.model_validate(
            {"judgement_ids": ["x"], "criteria": [scale("s").model_dump()], "rubric": "generate"}
        )
    with pytest.raises(ValidationError, match="rubric"):
        JudgeRequest.model_validate({**base, "rubric": "rb_123"})
    twenty = [item(f"i{k}").model_dump() for k in range(20)]
    assert len(JudgeRequest.model_validate({**base, "criteria": twenty}).criteria or []) == 20


def test_fingerprint_form_of_the_default_criteria_is_unchanged_by_checklists() -> None:
    # Pinned: the form earlier builds hashed (Criterion.model_dump() with weight 1.0 and no scale or kind).
    assert criterion_config(DEFAULT_CRITERIA[0]) == {
        "name": "correctness",
        "description": DEFAULT_CRITERIA[0].description,
        "mark_1": DEFAULT_CRITERIA[0].mark_1,
        "mark_5": DEFAULT_CRITERIA[0].mark_5,
        "weight": 1.0,
    }
    assert criterion_config(item("x", "pitfall"))["kind"] == "pitfall"
    assert criterion_config(item("x"))["scale"] == "binary"


def test_a_written_rubric_is_read_into_binary_items_and_a_bad_one_is_refused() -> None:
    schema = rubric_schema(3)
    assert schema["required"] == ["item_1", "item_2", "item_3"]
    good = (
        '{"item_1": {"description": "Gives 42", "kind": "essential"},'
        ' "item_2": {"description": "Shows the sum", "kind": "important"},'
        ' "item_3": {"description": "Says 41", "kind": "pitfall"}}'
    )
    criteria, problem = parse_rubric(good, 3)
    assert problem is None
    assert [(c.name, c.kind, c.scale) for c in criteria] == [
        ("item_1", "essential", "binary"),
        ("item_2", "important", "binary"),
        ("item_3", "pitfall", "binary"),
    ]
    pitfalls = good.replace("essential", "pitfall").replace("important", "pitfall")
    assert "every item is a pitfall" in (parse_rubric(pitfalls, 3)[1] or "")
    assert "item_3 is missing" in (parse_rubric(good.split(', "item_3"')[0] + "}", 3)[1] or "")
    assert "kind" in (
        parse_rubric(good.replace('"optional"', '"x"').replace("important", "vital"), 3)[1] or ""
    )
    assert "not valid JSON" in (parse_rubric("no", 3)[1] or "")
