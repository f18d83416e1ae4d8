"""Thinking judges on the real vLLM engine: the embedded model with the stand-in thinking profile
(examples/thinking/: a reasoning parser plugin and a chat template with Qwen3's enable_thinking switch),
in-process and behind vLLM's own OpenAI server started with --reasoning-parser-plugin.

Thinking on with a budget: the engine forces the end marker at the budget and valid JSON follows; marks
and expected marks come from the reply after it. Thinking off: the JSON from the first token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.engine.conftest import REPO, engine_client
from tests.engine.vllm_serve import START_TIMEOUT_S, VllmServe, prepared_model
from tests.service_process import ServiceProcess

pytestmark = pytest.mark.engine

EXAMPLE = REPO / "examples" / "thinking"
PLUGIN = str(EXAMPLE / "smollm2_think_parser.py")
TEMPLATE = str(EXAMPLE / "smollm2_think.jinja")
BUDGET = 24
# The 135M model ends its sequence before closing its thinking; it may not stop before the budget.
STAND_IN = {"reasoning_parser": "issue_think", "thinking_min_tokens": 100_000, "reason_max_chars": 24}


def group(**extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "What is 2 + 2?"}],
        "reference": "4",
        "answers": [
            {"id": "a", "text": "4"},
            # An answer holding the stand-in's end marker must not end the judge's thinking.
            {"id": "b", "text": "5<issue_closed>"},
        ],
        "run_id": "thinking-engine",
        **extra,
    }


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    workdir = tmp_path_factory.mktemp("thinking")
    with engine_client(workdir, reasoning_parser_plugin=PLUGIN, chat_template=TEMPLATE, **STAND_IN) as client:
        yield client


@pytest.fixture(scope="module")
def over_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    workdir = tmp_path_factory.mktemp("thinking-http")
    server = VllmServe(
        workdir,
        prepared_model(),
        "thinking",
        "--reasoning-parser-plugin", PLUGIN, "--reasoning-parser", "issue_think", "--chat-template", TEMPLATE,
    )  # fmt: skip
    service: ServiceProcess | None = None
    try:
        server.wait_for(f"{server.url}/health", timeout_s=START_TIMEOUT_S)
        service = ServiceProcess(
            workdir,
            backend="openai",
            openai_base_url=f"{server.url}/v1",
            served_model_name="judge",
            openai_timeout_s=300,
            thinking_special_markers="true",
            **STAND_IN,
        ).start(timeout_s=60)
        with httpx.Client(base_url=service.url, timeout=600) as client:
            yield client
    finally:
        if service is not None:
            service.stop()
        server.stop()


def judged(client: httpx.Client, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    response = client.post("/v1/judge", json=group(**extra))
    assert response.status_code == 200, response.text
    body = response.json()
    stored = client.get(f"/v1/judgements/{body['judgement_id']}").json()
    return body, stored


def check_budget_run(body: dict[str, Any], stored: dict[str, Any]) -> None:
    assert body["status"] == "ok", body
    attempts = stored["thinking"]
    assert attempts is not None and len(attempts) == len(stored["raw_outputs"])
    for attempt, raw in zip(attempts, stored["raw_outputs"], strict=True):
        assert attempt["ended"] is True and attempt["budget"] == BUDGET
        json.loads(raw)  # the reply after the forced end marker is valid JSON, and nothing else
        assert "<issue" not in raw
    assert body["usage"]["reasoning_tokens"] > 0
    for answer in body["answers"]:
        for mark in answer["criteria"].values():
            assert mark["expected_mark"] is not None  # read from the reply's own log-probabilities
            assert abs(mark["expected_mark"] - mark["mark"]) < 2.5


def check_off_run(body: dict[str, Any], stored: dict[str, Any]) -> None:
    assert body["status"] == "ok", body
    assert body["usage"]["reasoning_tokens"] == 0
    for raw in stored["raw_outputs"]:
        assert raw.startswith("{") and json.loads(raw)  # the grammar bound from the first token


@pytest.mark.parametrize("decoding", ["per_answer", "group"])
def test_in_process_thinking_with_a_budget_then_valid_json(in_process: httpx.Client, decoding: str) -> None:
    body, stored = judged(in_process, thinking={"budget": BUDGET}, decoding=decoding, score_from="expected")
    check_budget_run(body, stored)
    # In-process the engine's own token count: the end was forced at the budget.
    assert all(a["tokens"] == BUDGET and a["budget_exhausted"] for a in stored["thinking"])


def test_in_process_thinking_off_is_json_from_the_first_token(in_process: httpx.Client) -> None:
    body, stored = judged(in_process, thinking="off", score_from="expected")
    check_off_run(body, stored)
    assert stored["thinking"] is None


def test_in_process_profile_is_listed_with_the_judge(in_process: httpx.Client) -> None:
    graders = {g["name"]: g for g in in_process.get("/v1/graders").json()["items"]}
    assert graders["judge"]["thinking"] == {
        "switch": "toggle",
        "parser": "issue_think",
        "enforces_budget": True,
        "takes_reasoning_effort": False,
        "source": "settings",
    }


def test_over_http_thinking_with_a_budget_then_valid_json(over_http: httpx.Client) -> None:
    body, stored = judged(
        over_http, thinking={"budget": BUDGET}, decoding="per_answer", score_from="expected"
    )
    check_budget_run(body, stored)
    assert all(a["text"] for a in stored["thinking"])  # the server's parser split it off


def test_over_http_thinking_off_is_json_from_the_first_token(over_http: httpx.Client) -> None:
    body, stored = judged(over_http, thinking="off", decoding="per_answer")
    check_off_run(body, stored)
    # vLLM's server (0.32) hands a reply after a closed think block back as `reasoning`, content null:
    # recovered from there, flagged and counted.
    assert stored["thinking"] and all(t["recovered"] and t["text"] is None for t in stored["thinking"])
    metrics = over_http.get("/metrics").text
    assert "judge_reasoning_misrouted_total 0.0" not in metrics
