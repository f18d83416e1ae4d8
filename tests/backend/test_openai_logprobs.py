"""Log-probabilities over the OpenAI-compatible endpoint (httpx.MockTransport): asked, read, and turned
into expected marks by the whole service; an endpoint that gives none still scores every answer."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.base import TokenLogprobs
from judge_service.backends.openai_http import OpenAIHTTPBackend
from judge_service.config import Settings
from tests.api.conftest import group, wait_ready
from tests.backend.test_openai_http import BASE, MODEL, make_backend, models_response, request, sequence

# What the scripted endpoint puts on each mark's digit: 0.7 on the mark, 0.3 on the mark above (or below).
SPREAD = 0.7


def logprobs_content(text: str) -> list[dict[str, Any]]:
    """OpenAI's choices[0].logprobs.content for `text`: one token per character, the mark digits spread."""
    content = []
    digits = {m.start(1) for m in re.finditer(r'"mark": ?([1-5])', text)}
    for i, char in enumerate(text):
        top: list[dict[str, Any]] = []
        logprob = 0.0
        if i in digits:
            mark = int(char)
            other = mark + 1 if mark < 5 else mark - 1
            logprob = math.log(SPREAD)
            top = [
                {"token": char, "logprob": logprob},
                {"token": str(other), "logprob": math.log(1 - SPREAD)},
            ]
        content.append({"token": char, "logprob": logprob, "bytes": list(char.encode()), "top_logprobs": top})
    return content


class ScriptedEndpoint:
    """A chat completions endpoint marking every criterion 4, with or without log-probabilities."""

    def __init__(self, with_logprobs: bool = True) -> None:
        self.with_logprobs = with_logprobs
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, http_request: httpx.Request) -> httpx.Response:
        if http_request.url.path == "/v1/models":
            return models_response(MODEL, max_model_len=None)
        if http_request.url.path != "/v1/chat/completions":
            return httpx.Response(404)
        body = json.loads(http_request.content)
        self.bodies.append(body)
        schema = body["response_format"]["json_schema"]["schema"]
        criteria = schema["required"]  # a per-answer call: the schema is one answer's criteria
        text = json.dumps({name: {"reason": "Fine.", "mark": 4} for name in criteria})
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}}
        choice["finish_reason"] = "stop"
        if self.with_logprobs and body.get("logprobs"):
            choice["logprobs"] = {"content": logprobs_content(text)}
        usage = {"prompt_tokens": 100, "completion_tokens": len(text) // 3}
        return httpx.Response(200, json={"id": "c", "choices": [choice], "usage": usage})


def service(tmp_path: Path, endpoint: ScriptedEndpoint) -> TestClient:
    settings = Settings(backend="openai", served_model_name=MODEL, openai_base_url=BASE, home_dir=tmp_path)
    backend = OpenAIHTTPBackend.from_settings(settings, transport=httpx.MockTransport(endpoint))
    return TestClient(create_app(settings, backend=backend))


async def test_log_probabilities_are_asked_for_only_when_wanted() -> None:
    backend, rec, _ = await make_backend(sequence(completion_ok(), completion_ok()))
    try:
        await backend.generate(request(top_logprobs=5))
        await backend.generate(request())
    finally:
        await backend.close()
    asked, plain = (json.loads(c.content) for c in rec.calls("/v1/chat/completions"))
    assert asked["logprobs"] is True and asked["top_logprobs"] == 5
    assert "logprobs" not in plain and "top_logprobs" not in plain


def completion_ok(logprobs: Any = None) -> httpx.Response:
    choice: dict[str, Any] = {"index": 0, "message": {"content": "4"}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return httpx.Response(
        200, json={"choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    )


async def test_the_endpoints_log_probabilities_are_read_token_by_token() -> None:
    content = [
        {
            "token": "4",
            "logprob": -0.4,
            "top_logprobs": [{"token": "4", "logprob": -0.4}, {"token": "5", "logprob": -1.2}],
        }
    ]
    backend, _, _ = await make_backend(sequence(completion_ok({"content": content})))
    try:
        generation = await backend.generate(request(top_logprobs=2))
    finally:
        await backend.close()
    assert generation.logprobs == (TokenLogprobs("4", -0.4, (("4", -0.4), ("5", -1.2))),)


async def test_absent_or_malformed_log_probabilities_are_none_not_an_error() -> None:
    replies = [completion_ok(), completion_ok({"content": None}), completion_ok({"content": [{"token": 4}]})]
    backend, _, _ = await make_backend(sequence(*replies))
    try:
        for _ in replies:
            generation = await backend.generate(request(top_logprobs=2))
            assert generation.text == "4" and generation.logprobs is None
    finally:
        await backend.close()


def test_expected_marks_come_from_the_endpoints_log_probabilities(tmp_path: Path) -> None:
    endpoint = ScriptedEndpoint()
    with service(tmp_path, endpoint) as client:
        wait_ready(client)
        response = client.post("/v1/judge", json=group(3, decoding="per_answer", score_from="expected"))
    assert response.status_code == 200, response.text
    assert len(endpoint.bodies) == 3 and all(b["top_logprobs"] == 10 for b in endpoint.bodies)
    expected = 4 * SPREAD + 5 * (1 - SPREAD)  # 4.3
    for answer in response.json()["answers"]:
        for mark in answer["criteria"].values():
            assert mark["mark"] == 4
            assert math.isclose(mark["expected_mark"], expected)
            assert math.isclose(mark["score"], (expected - 1) / 4)
        assert math.isclose(answer["score"], (expected - 1) / 4, abs_tol=1e-6)


def test_an_endpoint_without_log_probabilities_still_scores_every_answer(tmp_path: Path) -> None:
    with service(tmp_path, ScriptedEndpoint(with_logprobs=False)) as client:
        wait_ready(client)
        body = client.post("/v1/judge", json=group(2, decoding="per_answer", score_from="expected")).json()
    assert body["status"] == "ok"
    for answer in body["answers"]:
        assert answer["score"] == 0.75  # mark 4 on every criterion
        assert all(m["expected_mark"] is None for m in answer["criteria"].values())
        assert "no log-probabilities" in answer["explanation"]
