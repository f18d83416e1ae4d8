"""Locating marks among the reply's tokens (judging/llm/mark_locations.py): the decoded-document path and
the token-by-token lexer (mark_lexer.py) find the same marks, however the engine cut the reply into
tokens, and each location is the first character of the mark's value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge_service.judging.json_text import decode_whole
from judge_service.judging.llm.mark_lexer import lexed_locations
from judge_service.judging.llm.mark_locations import mark_locations

KEYS = st.sampled_from(["mark", "met", "tone", "a1", "reason", 'say "mark": 4', "back\\slash", "é"])
SCALARS = st.one_of(
    st.integers(-3, 60), st.booleans(), st.none(), st.floats(-2, 9, allow_nan=False), st.just(4)
)
TEXTS = st.text(alphabet='ab "\\:{}[],4mark\n5té\u2028', max_size=12)
VALUES = st.recursive(
    st.one_of(SCALARS, TEXTS),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)


def cut(text: str, cuts: list[int]) -> list[str]:
    """The text as tokens, cut at the given positions (an empty token where two cuts meet)."""
    bounds = sorted(c % (len(text) + 1) for c in cuts)
    return [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]


@settings(max_examples=400, deadline=None)
@given(
    value=VALUES,
    indent=st.sampled_from([None, 1, 2]),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=40),
    bare=st.booleans(),
)
def test_the_document_path_and_the_lexer_find_the_same_marks_however_the_reply_is_cut(
    value: Any, indent: int | None, ascii_only: bool, cuts: list[int], bare: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    tokens = cut(text, cuts)
    found = mark_locations(tokens, bare=bare)
    assert found == lexed_locations(tokens, bare=bare)
    # The parser's document (objects as dicts) gives the same, without decoding the reply again.
    assert mark_locations(tokens, bare=bare, document=decode_whole(text, flag_duplicates=True)) == found
    for index, offset in found.values():
        assert tokens[index][offset] in "0123456789tf"


@pytest.mark.parametrize("bare", [False, True])
def test_a_repeated_key_in_the_parsers_document_is_read_from_the_pairs(bare: bool) -> None:
    """The parser's dicts keep a repeated key once (its value flagged): where each copy stood is read
    again."""
    text = '{"a": {"tone": {"reason": "x", "mark": 2}, "tone": {"reason": "y", "mark": 3}, "help": 4}}'
    tokens = cut(text, list(range(0, len(text), 7)))
    document = decode_whole(text, flag_duplicates=True)
    found = mark_locations(tokens, bare=bare, document=document)
    assert found == lexed_locations(tokens, bare=bare)
    assert ("a", "tone") not in found  # marked twice: neither copy counts


def test_a_document_of_another_text_is_not_used() -> None:
    """A thinking judge's tokens are the reply after its thinking: the parser's document of the whole
    text must not be walked for them."""
    reply = '{"tone": {"reason": "Fine.", "mark": 3}}'
    other = decode_whole('{"tone": {"reason": "Fine.", "mark": 3}, "x": {"mark": 1}}', flag_duplicates=True)
    tokens = [reply[:-3], reply[-3:]]
    assert mark_locations(tokens, document=other) == mark_locations(tokens) == {("tone",): (1, 0)}


def test_a_group_reply_with_each_digit_a_token_is_located_by_key_path() -> None:
    reply = {
        "b": {"tone": {"reason": 'Says "mark": 5.', "mark": 2}},
        "a": {"tone": {"reason": "Ok.", "mark": 4}},
    }
    text = json.dumps(reply)
    digits = [i for i, char in enumerate(text) if char.isdigit()]
    tokens = cut(text, [*digits, *(i + 1 for i in digits)])
    found = mark_locations(tokens)
    assert {path: tokens[i][o] for path, (i, o) in found.items()} == {("b", "tone"): "2", ("a", "tone"): "4"}


def test_prose_around_the_reply_is_read_by_the_lexer() -> None:
    tokens = ['Here: {"tone": {"reason": "Fine.", "mark": ', "3", "}} done"]
    assert mark_locations(tokens) == {("tone",): (1, 0)}


CRITERION = st.fixed_dictionaries(
    {"reason": TEXTS, "mark": st.integers(1, 5)}, optional={"met": st.booleans(), "note": VALUES}
)
GROUP_REPLIES = st.one_of(
    st.dictionaries(st.sampled_from(["tone", "help", "mark"]), CRITERION, max_size=3),
    st.dictionaries(
        st.sampled_from(["a1", "a2", "a3", "mark"]),
        st.dictionaries(st.sampled_from(["tone", "help", 'x\\"mark', "met"]), CRITERION, max_size=3),
        max_size=3,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    value=GROUP_REPLIES,
    spelled=st.sampled_from(["mark", "m\\u0061rk", "\\u006dark"]),
    cuts=st.lists(st.integers(0, 10_000), max_size=30),
)
def test_the_layout_judges_write_is_located_as_the_lexer_locates_it(
    value: Any, spelled: str, cuts: list[int]
) -> None:
    """Replies shaped as constrained decoding writes them, with stray mark keys, keys that end in an
    escaped quote and "mark", and mark keys spelled with escapes: the shortcut for that layout finds what
    the lexer finds, or leaves the reply to the walk."""
    text = json.dumps(value).replace('"mark"', f'"{spelled}"', 1)
    tokens = cut(text, cuts)
    found = mark_locations(tokens, document=decode_whole(text, flag_duplicates=True))
    assert found == lexed_locations(tokens) == mark_locations(tokens)
