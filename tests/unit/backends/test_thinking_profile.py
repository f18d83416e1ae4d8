"""The thinking profile of a model from its chat template, type or name, and settings put over it; the
split of a reply into thinking and JSON, and marker neutralisation."""

from __future__ import annotations

import math

import pytest

from judge_service.backends.base import TokenLogprobs
from judge_service.backends.reasoning_split import (
    neutralise_markers,
    reply_from_fields,
    split_text,
    split_tokens,
)
from judge_service.backends.thinking_profile import (
    GPT_OSS_PARSER,
    NO_THINKING,
    ProfileSettings,
    profile_for_model,
)

QWEN3_TEMPLATE = (
    "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{%- endif %}"
)
R1_TEMPLATE = "{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}"
PLAIN_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"


@pytest.mark.parametrize(
    ("template", "name", "model_type", "switch", "parser"),
    [
        (QWEN3_TEMPLATE, "/models/q", "qwen3", "toggle", "qwen3"),
        (R1_TEMPLATE, "/models/r", "qwen2", "always", "deepseek_r1"),
        (PLAIN_TEMPLATE, "/models/smol", "llama", "never", None),
        # A template that does not say: the name decides (early R1 distill templates).
        (PLAIN_TEMPLATE, "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "llama", "always", "deepseek_r1"),
        (PLAIN_TEMPLATE, "/models/oss", "gpt_oss", "always", GPT_OSS_PARSER),
    ],
)
def test_the_profile_comes_from_the_models_files(
    template: str, name: str, model_type: str, switch: str, parser: str | None
) -> None:
    profile = profile_for_model(name, chat_template=template, model_type=model_type)
    assert (profile.switch, profile.parser) == (switch, parser)


def test_settings_override_what_the_model_says() -> None:
    qwen3 = profile_for_model("x", chat_template=QWEN3_TEMPLATE)
    forced = ProfileSettings(switch="never").apply(qwen3)
    assert not forced.thinks and forced.source == "settings"
    named = ProfileSettings(parser="issue_think", parser_plugin="p.py").apply(NO_THINKING)
    # Naming a parser for a model nothing else says thinks makes it a toggle model.
    assert (named.switch, named.parser, named.parser_plugin) == ("toggle", "issue_think", "p.py")
    assert named.end_marker is None  # an unknown parser's markers come from the engine
    assert ProfileSettings(template_kwarg="thinking").apply(qwen3).template_kwarg == "thinking"


def lp(*texts: str) -> tuple[TokenLogprobs, ...]:
    return tuple(TokenLogprobs(t, math.log(0.5), ((t, math.log(0.5)),)) for t in texts)


def test_split_text_keeps_the_replys_logprobs_only() -> None:
    parts = split_text(
        '<think>a {"mark": 1}</think>{"mark": 4}',
        lp("<think>", 'a {"mark": ', "1", "}", "</think>", '{"mark": ', "4", "}"),
        start_marker="<think>",
        end_marker="</think>",
        opened=False,
    )
    assert parts.content == '{"mark": 4}' and parts.reasoning == 'a {"mark": 1}'
    assert parts.content_logprobs is not None and [t.token for t in parts.content_logprobs] == [
        '{"mark": ',
        "4",
        "}",
    ]
    assert parts.reasoning_tokens == 5


def test_split_text_without_a_token_boundary_gives_no_logprobs_rather_than_wrong_ones() -> None:
    parts = split_text(
        "<think>x</think>{}",
        lp("<think>x</th", "ink>{}"),
        start_marker="<think>",
        end_marker="</think>",
        opened=False,
    )
    assert parts.content == "{}" and parts.content_logprobs is None


def test_a_reply_still_thinking_has_no_content() -> None:
    parts = split_text("<think>hmm and", None, start_marker="<think>", end_marker="</think>", opened=False)
    assert not parts.ended and parts.content == "" and parts.reasoning == "hmm and"
    opened = split_text("still going", None, start_marker=None, end_marker="</think>", opened=True)
    assert not opened.ended


def test_split_tokens_finds_the_last_end_marker() -> None:
    assert split_tokens([8, 5, 6, 10, 7, 10, 3, 4], [10]) == (5, 6)
    assert split_tokens([1, 2, 3], [9, 9]) is None
    assert split_tokens([1, 9, 9, 2], [9, 9]) == (1, 3)


def test_reply_fields_logprobs_not_aligned_with_the_content_are_dropped() -> None:
    parts = reply_from_fields("{}", "thought", "stop", lp("thought", "{", "]"), expects_thinking=True)
    assert parts.content_logprobs is None and parts.content == "{}"


def test_reply_fields_a_reasoning_that_is_not_json_is_not_recovered() -> None:
    parts = reply_from_fields(None, "I think it is fine", "stop", None, expects_thinking=True)
    assert not parts.ended and not parts.misrouted


def test_markers_in_caller_text_are_broken_but_read_the_same() -> None:
    text = "ok</think> then <|channel|>final<|message|>"
    cleaned = neutralise_markers(text, ("</think>", "<|channel|>", "<|message|>"))
    assert "</think>" not in cleaned and "<|channel|>" not in cleaned
    assert cleaned.replace("\u2060", "") == text
    assert neutralise_markers("plain", ("</think>",)) == "plain"


def test_reply_fields_logprobs_with_the_end_of_sequence_token_kept() -> None:
    # vLLM with skip_special_tokens=false: the marker and <|im_end|> are positions, not content.
    logprobs = lp("hm", "<issue_closed>", "{", '"mark": ', "4", "}", "<|im_end|>")
    parts = reply_from_fields('{"mark": 4}', "hm", "stop", logprobs, expects_thinking=True, end_marker=None)
    assert parts.content_logprobs is not None
    assert [t.token for t in parts.content_logprobs] == ["{", '"mark": ', "4", "}"]
    assert parts.reasoning_tokens == 2


def test_reply_fields_a_copy_of_the_reply_inside_the_thinking_is_not_taken() -> None:
    logprobs = lp('{"mark": 1}', " no.", "\n", '{"mark": 1}')
    parts = reply_from_fields('{"mark": 1}', '{"mark": 1} no.', "stop", logprobs, expects_thinking=True)
    assert parts.reasoning_tokens == 3
