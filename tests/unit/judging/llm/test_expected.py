"""Expected marks from log-probabilities (judging/llm/expected.py): locating each mark, weighting 1-5."""

from __future__ import annotations

import json
import math

import pytest

from judge_service.backends.base import TokenLogprobs
from judge_service.backends.fake import fake_logprobs
from judge_service.judging.llm.expected import expected_marks
from judge_service.judging.llm.mark_locations import mark_positions


def tokens_of(text: str, at_mark: dict[int, list[tuple[str, float]]] | None = None) -> list[TokenLogprobs]:
    """One token per character; at the n-th mark digit (0-based), the given (token, probability) list."""
    at_mark = at_mark or {}
    tokens, seen = [], 0
    positions = sorted(mark_positions(text).values())
    for i, char in enumerate(text):
        top: tuple[tuple[str, float], ...] = ()
        if i in positions:
            spread = at_mark.get(seen, [])
            top = tuple((t, math.log(p)) for t, p in spread)
            seen += 1
        tokens.append(TokenLogprobs(char, 0.0, top))
    return tokens


GROUP_REPLY = json.dumps(
    {
        "b": {"correctness": {"reason": "Wrong: says 7.", "mark": 2}, "tone": {"reason": "Fine.", "mark": 4}},
        "a": {"correctness": {"reason": 'Right, "mark": 5', "mark": 5}, "tone": {"reason": "Ok.", "mark": 3}},
    }
)


def test_every_mark_is_found_with_the_keys_that_lead_to_it() -> None:
    positions = mark_positions(GROUP_REPLY)
    assert set(positions) == {("b", "correctness"), ("b", "tone"), ("a", "correctness"), ("a", "tone")}
    # Each offset is the digit itself, not a look-alike inside a reason string.
    assert [GROUP_REPLY[p] for p in positions.values()] == ["2", "4", "5", "3"]
    per_answer = '{"correctness":{"reason":"Clear.","mark":4},"format":{"reason":"Tidy.","mark":1}}'
    assert {k: per_answer[v] for k, v in mark_positions(per_answer).items()} == {
        ("correctness",): "4",
        ("format",): "1",
    }


def test_marks_under_a_list_or_a_repeated_key_are_not_located() -> None:
    assert mark_positions('[{"id": "a", "tone": {"reason": "x", "mark": 3}}]') == {}
    repeated = '{"a": {"tone": {"reason": "x", "mark": 3}, "tone": {"reason": "y", "mark": 4}}}'
    assert mark_positions(repeated) == {}
    assert mark_positions("not json at all") == {}


def test_the_expected_mark_is_the_renormalized_probability_weighted_mark() -> None:
    text = '{"tone": {"reason": "Fine.", "mark": 4}}'
    # 0.5 on 4, 0.3 on 5, 0.1 on 3; 0.1 on a non-digit token, which renormalization drops.
    tokens = tokens_of(text, {0: [("4", 0.5), ("5", 0.3), ("3", 0.1), ("}", 0.1)]})
    assert expected_marks(tokens)[("tone",)] == pytest.approx((4 * 0.5 + 5 * 0.3 + 3 * 0.1) / 0.9)


def test_a_digit_inside_a_longer_token_counts_and_a_two_digit_number_does_not() -> None:
    before, digit, after = '{"tone": {"reason": "Fine.", "mark"', ":4", "}}"
    tokens = [
        TokenLogprobs(before, 0.0, ()),
        # The generated token is ":4"; alternatives ":5" and ":45" (a two-digit number: not a mark).
        TokenLogprobs(
            digit, math.log(0.6), ((":4", math.log(0.6)), (":5", math.log(0.2)), (":45", math.log(0.2)))
        ),
        TokenLogprobs(after, 0.0, ()),
    ]
    assert expected_marks(tokens)[("tone",)] == pytest.approx((4 * 0.6 + 5 * 0.2) / 0.8)


def test_the_generated_token_counts_even_when_missing_from_the_alternatives() -> None:
    text = '{"tone": {"reason": "Fine.", "mark": 2}}'
    tokens = tokens_of(text)  # no alternatives at all: the generated "2" alone
    assert expected_marks(tokens)[("tone",)] == 2.0


def test_the_fake_judges_spread_gives_non_integer_expected_marks_near_the_mark() -> None:
    found = expected_marks(fake_logprobs(GROUP_REPLY))
    marks = {("b", "correctness"): 2, ("b", "tone"): 4, ("a", "correctness"): 5, ("a", "tone"): 3}
    assert set(found) == set(marks)
    for key, mark in marks.items():
        assert abs(found[key] - mark) <= 0.5 and found[key] != mark
