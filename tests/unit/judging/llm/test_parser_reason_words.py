"""The words pattern for reasons, in Python's regex engine and in vLLM's grammar compiler (xgrammar)."""

from __future__ import annotations

import json
import re

import pytest
import xgrammar
from xgrammar.testing import _is_grammar_accept_string

from judge_service.judging.llm.parser import answer_schema, output_schema, reason_words_pattern

WORDS = [
    "Correct and clear.",
    "Says 42, not 41.",
    "Matches the reference; well-structured (short).",
    "Uses a 3.5% rate, as asked.",
    "Très bien, réponse claire.",
]
NOT_WORDS = [
    "4.5",  # what the embedded judge wrote without the pattern
    "1.1.1.1.1.1.1.1",
    "Good. 1.1.1.1",
    "It is 1.1.1 wrong",
    "",
    "a" * 70,  # one endless word
    " leading space",
]


@pytest.fixture(scope="module")
def grammar() -> xgrammar.Grammar:
    schema = answer_schema(["tone"], 60, reason_words=True)
    # What vLLM compiles with disable_any_whitespace (backends/vllm_engine.py).
    return xgrammar.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False)


def reply(reason: str) -> str:
    return json.dumps({"tone": {"reason": reason, "mark": 4}}, ensure_ascii=False)


@pytest.mark.parametrize("reason", WORDS)
def test_reasons_in_words_pass(reason: str, grammar: xgrammar.Grammar) -> None:
    assert re.fullmatch(reason_words_pattern(60), reason)
    assert _is_grammar_accept_string(grammar, reply(reason))


@pytest.mark.parametrize("reason", NOT_WORDS)
def test_digits_and_dots_and_endless_words_are_refused(reason: str, grammar: xgrammar.Grammar) -> None:
    assert not re.fullmatch(reason_words_pattern(60), reason)
    assert not _is_grammar_accept_string(grammar, reply(reason))


def test_the_pattern_bounds_the_number_of_words() -> None:
    ten = " ".join(["word"] * 10)
    assert re.fullmatch(reason_words_pattern(60), ten)
    assert not re.fullmatch(reason_words_pattern(60), " ".join(["word"] * 12))


def test_the_pattern_is_only_in_the_schema_when_asked_for() -> None:
    plain = output_schema(["a"], ["tone"], 60)
    worded = output_schema(["a"], ["tone"], 60, reason_words=True)
    assert "pattern" not in plain["properties"]["a"]["properties"]["tone"]["properties"]["reason"]
    reason = worded["properties"]["a"]["properties"]["tone"]["properties"]["reason"]
    assert reason == {"type": "string", "pattern": reason_words_pattern(60)}


def test_vllm_accepts_the_schema_for_its_xgrammar_backend() -> None:
    """vLLM refuses schemas xgrammar cannot honour (a pattern beside length bounds, among others)."""
    from vllm.v1.structured_output.backend_xgrammar import has_xgrammar_unsupported_json_features

    for schema in (
        answer_schema(["tone"], 60, reason_words=True),
        output_schema(["a"], ["tone"], 60, reason_words=True),
    ):
        assert not has_xgrammar_unsupported_json_features(schema)
