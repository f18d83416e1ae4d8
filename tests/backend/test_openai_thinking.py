"""OpenAIHTTPBackend and thinking judges, on httpx.MockTransport: what a call sends for each profile, and
each reply shape vLLM's server has used (reasoning_content up to 0.10, reasoning from 0.11, both in 0.11,
content null at the token limit, the JSON in the reasoning field, no parser and the thinking inline)."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest

from judge_service.backends.base import GenerationRequest, ThinkingCall
from judge_service.backends.openai_http import OpenAIHTTPBackend
from judge_service.backends.thinking_profile import ProfileSettings
from judge_service.errors import JudgeBackendError

BASE = "http://judge.test:8001/v1"
REPLY = '{"correctness":{"reason":"ok","mark":4}}'
THOUGHT = 'The first answer is {"mark": 1}? No, it is right.'
MESSAGES = [{"role": "user", "content": "Rate this."}]


def completion(message: dict[str, Any], finish: str = "stop", logprobs: Any = None, **usage: Any) -> dict:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", **message},
        "finish_reason": finish,
    }
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {
        "id": "c1",
        "choices": [choice],
        "usage": {"prompt_tokens": 10, "completion_tokens": 30, **usage},
    }


def tokens(*texts: str) -> list[dict[str, Any]]:
    return [
        {"token": t, "logprob": math.log(0.5), "top_logprobs": [{"token": t, "logprob": math.log(0.5)}]}
        for t in texts
    ]


async def backend_for(
    model: str, body: dict[str, Any], *, named: ProfileSettings | None = None
) -> tuple[OpenAIHTTPBackend, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": model, "max_model_len": 32768}]})
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=body)

    backend = OpenAIHTTPBackend(BASE, model, transport=httpx.MockTransport(handler), thinking=named)
    await backend.start()
    return backend, sent


def call(thinking: ThinkingCall, top_logprobs: int = 0) -> GenerationRequest:
    return GenerationRequest(
        messages=MESSAGES,
        max_tokens=600,
        json_schema={"type": "object"},
        thinking=thinking,
        top_logprobs=top_logprobs,
    )


@pytest.mark.parametrize(
    ("model", "switch", "parser"),
    [
        ("Qwen/Qwen3-8B", "toggle", "qwen3"),
        ("Qwen/Qwen3-30B-A3B-Thinking-2507", "always", "deepseek_r1"),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "never", None),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "always", "deepseek_r1"),
        ("openai/gpt-oss-20b", "always", "openai_gptoss"),
        ("meta-llama/Llama-3.1-8B-Instruct", "never", None),
    ],
)
async def test_the_profile_of_the_common_families_needs_no_setting(
    model: str, switch: str, parser: str | None
) -> None:
    backend, _ = await backend_for(model, completion({"content": REPLY}))
    profile = backend.thinking_profile
    assert (profile.switch, profile.parser) == (switch, parser)
    assert profile.enforces_budget == (switch != "never" and parser != "openai_gptoss")
    await backend.close()


async def test_a_toggle_model_gets_the_switch_the_budget_and_the_effort() -> None:
    backend, sent = await backend_for("Qwen/Qwen3-8B", completion({"content": REPLY, "reasoning": THOUGHT}))
    await backend.generate(call(ThinkingCall(enabled=True, budget=128, effort="high")))
    await backend.generate(call(ThinkingCall(enabled=False)))
    on, off = sent
    assert on["chat_template_kwargs"] == {"enable_thinking": True}
    assert on["thinking_token_budget"] == 128 and on["reasoning_effort"] == "high"
    assert off["chat_template_kwargs"] == {"enable_thinking": False}
    assert "thinking_token_budget" not in off and "skip_special_tokens" not in off
    await backend.close()


async def test_a_named_profile_overrides_the_name_and_keeps_special_tokens() -> None:
    named = ProfileSettings(switch="toggle", template_kwarg="thinking", parser="custom", special_markers=True)
    backend, sent = await backend_for("my-judge", completion({"content": REPLY}), named=named)
    await backend.generate(call(ThinkingCall(enabled=True, budget=32, min_tokens=40)))
    assert sent[0]["chat_template_kwargs"] == {"thinking": True}
    assert sent[0]["skip_special_tokens"] is False
    assert sent[0]["min_tokens"] == 32  # never past the budget
    await backend.close()


async def test_a_model_that_does_not_think_gets_nothing_new() -> None:
    backend, sent = await backend_for("plain-judge", completion({"content": REPLY}))
    reply = await backend.generate(call(ThinkingCall(enabled=False)))
    assert set(sent[0]) == {"model", "messages", "max_tokens", "temperature", "response_format"}
    assert reply.text == REPLY and reply.reasoning is None and reply.reasoning_ended
    await backend.close()


@pytest.mark.parametrize(
    "fields",
    [
        {"reasoning_content": THOUGHT},  # vLLM up to 0.10
        {"reasoning": THOUGHT},  # 0.11 on
        {"reasoning": THOUGHT, "reasoning_content": THOUGHT},  # 0.11 sends both
    ],
)
async def test_every_reasoning_field_shape_is_read(fields: dict[str, str]) -> None:
    logprobs = tokens(
        'The first answer is {"mark": ',
        "1",
        "}? No, it is right.",
        '{"correctness":{"reason":"ok","mark":',
        "4",
        "}}",
    )
    backend, _ = await backend_for(
        "Qwen/Qwen3-8B", completion({"content": REPLY, **fields}, logprobs=logprobs)
    )
    reply = await backend.generate(call(ThinkingCall(enabled=True), top_logprobs=5))
    assert reply.text == REPLY and reply.reasoning == THOUGHT and reply.reasoning_ended
    # The log-probabilities of the reply only: the decoy's "1" is not among them.
    assert reply.logprobs is not None and "".join(t.token for t in reply.logprobs) == REPLY
    assert reply.reasoning_tokens == 3
    await backend.close()


async def test_content_null_at_the_token_limit_is_thinking_cut_off() -> None:
    body = completion({"content": None, "reasoning": "still going"}, finish="length")
    backend, _ = await backend_for("Qwen/Qwen3-8B", body)
    reply = await backend.generate(call(ThinkingCall(enabled=True)))
    assert reply.text == "" and not reply.reasoning_ended and reply.finish_reason == "length"
    await backend.close()


async def test_content_and_reasoning_both_null_at_the_limit_is_cut_off_too() -> None:
    backend, _ = await backend_for("Qwen/Qwen3-8B", completion({"content": None}, finish="length"))
    reply = await backend.generate(call(ThinkingCall(enabled=True)))
    assert not reply.reasoning_ended
    await backend.close()


async def test_json_in_the_reasoning_field_is_recovered_and_flagged() -> None:
    backend, _ = await backend_for("Qwen/Qwen3-8B", completion({"content": None, "reasoning": REPLY}))
    reply = await backend.generate(call(ThinkingCall(enabled=False)))
    assert reply.text == REPLY and reply.misrouted and reply.reasoning_ended
    await backend.close()


async def test_thinking_inline_in_content_is_split_at_the_marker() -> None:
    content = f"<think>{THOUGHT}</think>{REPLY}"
    logprobs = tokens("<think>", THOUGHT, "</think>", REPLY)
    backend, _ = await backend_for("Qwen/Qwen3-8B", completion({"content": content}, logprobs=logprobs))
    reply = await backend.generate(call(ThinkingCall(enabled=True), top_logprobs=5))
    assert reply.text == REPLY and reply.reasoning == THOUGHT
    assert reply.logprobs is not None and [t.token for t in reply.logprobs] == [REPLY]
    await backend.close()


async def test_a_model_that_does_not_think_still_refuses_null_content() -> None:
    backend, _ = await backend_for("plain-judge", completion({"content": None}))
    with pytest.raises(JudgeBackendError, match="content is missing or null"):
        await backend.generate(call(ThinkingCall()))
    await backend.close()


async def test_the_tokenize_call_carries_the_switch() -> None:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "Qwen/Qwen3-8B"}]})
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"count": 12})

    backend = OpenAIHTTPBackend(BASE, "Qwen/Qwen3-8B", transport=httpx.MockTransport(handler))
    await backend.start()
    assert await backend.count_prompt_tokens(MESSAGES, ThinkingCall(enabled=True)) == 12
    assert sent[0]["chat_template_kwargs"] == {"enable_thinking": True}
    await backend.close()
