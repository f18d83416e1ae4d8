"""Input limits: the request body cap (413 too_large), control characters (422), empty answers (judged)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from judge_service.backends.fake import FakeBackend
from judge_service.schemas import STORED, JudgeRequest
from tests.api.conftest import group, make_client, wait_ready

LIMIT = 4096


@pytest.fixture
def small_client(tmp_path: Path) -> Iterator[TestClient]:
    with make_client(tmp_path, FakeBackend(), max_request_bytes=LIMIT) as client:
        wait_ready(client)
        yield client


def padded(size: int) -> bytes:
    """A valid group whose JSON body is exactly `size` bytes."""
    body = group(2)
    base = len(json.dumps(body).encode())
    body["reference"] += "x" * (size - base)
    raw = json.dumps(body).encode()
    assert len(raw) == size
    return raw


def post(client: TestClient, raw: bytes | Iterator[bytes], path: str = "/v1/judge") -> Any:
    return client.post(path, content=raw, headers={"content-type": "application/json"})


def assert_too_large(response: Any) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "too_large"
    assert f"the limit is {LIMIT} bytes" in error["message"]
    assert "JUDGE_MAX_REQUEST_BYTES" in error["message"] and "fewer" in error["message"]
    assert error["details"] == {"limit_bytes": LIMIT}


# --------------------------------------------------------------------------- body size


def test_body_at_the_limit_is_judged_one_byte_over_is_413(small_client: TestClient) -> None:
    assert post(small_client, padded(LIMIT)).status_code == 200
    response = post(small_client, padded(LIMIT + 1))
    assert_too_large(response)
    assert f"declares {LIMIT + 1} bytes" in response.json()["error"]["message"]


def test_streamed_body_without_content_length_is_counted(small_client: TestClient) -> None:
    raw = padded(LIMIT * 3)
    response = post(small_client, iter([raw[:1000], raw[1000:]]))
    assert_too_large(response)
    assert "while streaming" in response.json()["error"]["message"]
    assert post(small_client, iter([padded(LIMIT)])).status_code == 200


def test_batch_over_the_limit_is_413_and_counted(small_client: TestClient) -> None:
    groups = {"groups": [group(4, group_key=f"g{i}") for i in range(40)]}
    assert_too_large(small_client.post("/v1/judge/batch", json=groups))
    metrics = small_client.get("/metrics").text
    assert 'judge_requests_total{endpoint="/v1/judge/batch",key="",status="413"} 1.0' in metrics


def test_default_limit_is_4_mib(client: TestClient) -> None:
    assert client.app.state.settings.max_request_bytes == 4 * 2**20  # type: ignore[attr-defined]
    huge = {"groups": [group(64) | {"reference": "r" * 19_000} for _ in range(256)]}
    assert client.post("/v1/judge/batch", json=huge).status_code == 413


# --------------------------------------------------------------------------- control characters


@pytest.mark.parametrize(
    ("where", "char"),
    [
        ("answers.1.text", "\x00"),
        ("answers.0.text", "\x1b"),
        ("conversation.0.content", "\x07"),
        ("reference", "\x0b"),
        ("group_key", "\x1f"),
    ],
)
def test_control_characters_are_refused_with_what_to_fix(client: TestClient, where: str, char: str) -> None:
    body = group(2, group_key="g")
    target: Any = body
    *path, last = where.split(".")
    for part in path:
        target = target[int(part)] if part.isdigit() else target[part]
    target[last] = f"ok {char} text"
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert where in error["message"]
    assert f"U+{ord(char):04X} at position 3" in error["message"]
    assert "remove control characters" in error["message"]
    assert error["details"][0]["field"] == where


def test_tab_newline_carriage_return_and_other_unicode_are_accepted(client: TestClient) -> None:
    body = group(2)
    body["answers"][0]["text"] = "line 1\r\n\tline 2 \u00e9\u4e2d\U0001f600 \x7f \u0085"
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text


def test_unpaired_surrogate_is_refused(client: TestClient) -> None:
    raw = json.dumps(group(1)).replace('"Answer 0', '"\\ud800Answer 0').encode()
    response = post(client, raw)
    assert response.status_code == 422
    assert "answers.0.text" in response.json()["error"]["message"]


def test_an_unpaired_surrogate_in_group_key_is_refused_before_any_judging(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    raw = json.dumps(group(2, run_id="surrogate", group_key="X")).replace('"X"', '"\\ud800"').encode()
    response = post(client, raw)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["details"][0]["field"] == "group_key" and "unpaired surrogate U+D800" in error["message"]
    assert fake_backend.requests == []  # refused before the judge was asked
    assert client.get("/v1/runs/surrogate/judgements").json()["items"] == []
    paired = post(
        client, json.dumps(group(2, run_id="surrogate", group_key="\U0001f600")).encode()
    )  # \ud83d\ude00
    assert paired.status_code == 200 and paired.json()["group_key"] == "\U0001f600"


LONE = "\ud800"
# Mappings whose keys are the caller's data (not field names): a lone surrogate in a key is refused too.
DATA_MAPPINGS = {"item", "json_schema", "human", "scores", "graders"}
CRITERION = {"name": "correctness", "description": "Is it right?", "mark_1": "wrong", "mark_5": "right"}
STRING_CHECK = {
    "type": "string_check",
    "name": "s",
    "input": "{{sample.output_text}}",
    "reference": "x",
    "operation": "eq",
}
ROUTE_BODIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "judge": (
        "POST",
        "/v1/judge",
        group(
            2,
            run_id="r",
            group_key="g",
            criteria=[CRITERION],
            item={"k": "v", "l": ["x", {"m": "n"}]},
            options={"labels": ["x"], "json_schema": {"type": "object", "title": "t"}},
        ),
    ),
    "batch": ("POST", "/v1/judge/batch", {"groups": [group(2, group_key="g")]}),
    "member": (
        "POST",
        "/v1/judge/member",
        {
            "group_key": "m",
            "group_size": 1,
            "answer": {"id": "a0", "text": "t"},
            "conversation": [{"role": "user", "content": "q"}],
            "reference": "r",
            "item": {"k": "v"},
        },
    ),
    "rubric": (
        "POST",
        "/v1/rubrics",
        {"conversation": [{"role": "user", "content": "q"}], "reference": "r", "instructions": "i"},
    ),
    "rubric edit": ("PUT", "/v1/rubrics/{rubric}", {"criteria": [CRITERION], "note": "n"}),
    "labels": ("PUT", "/v1/judgements/{judgement}/labels", {"human": {"a0": 1}, "labeler": "lab"}),
    "agreement": (
        "POST",
        "/v1/quality/agreement",
        {
            "human": [{"group_key": "g", "labeler": "l", "human": {"a0": 1, "a1": 0}}],
            "scores": {"g": {"a0": 0.5}},
        },
    ),
    "calibration": ("POST", "/v1/quality/calibration", {"run_id": "r", "fingerprint": "f"}),
    "regrade": (
        "POST",
        "/v1/regrade",
        {"judgement_ids": ["{judgement}"], "criteria": [CRITERION], "as_run_id": "x"},
    ),
    "openrlhf": (
        "POST",
        "/v1/compat/openrlhf?group_size=1",
        {"query": ["<|user|>q<|assistant|>a"], "prompts": ["<|user|>q"], "labels": ["l"]},
    ),
    "rft string_check": (
        "POST",
        "/v1/fine_tuning/alpha/graders/run",
        {"grader": STRING_CHECK, "model_sample": "x", "item": {"k": "v"}},
    ),
    "rft score_model": (
        "POST",
        "/v1/fine_tuning/alpha/graders/run",
        {
            "grader": {
                "type": "score_model",
                "name": "s",
                "model": "m",
                "input": [{"role": "user", "content": "rate {{sample.output_text}}"}],
                "sampling_params": {"reasoning_effort": "low"},
            },
            "model_sample": "x",
        },
    ),
    "rft label_model": (
        "POST",
        "/v1/fine_tuning/alpha/graders/run",
        {
            "grader": {
                "type": "label_model",
                "name": "l",
                "model": "m",
                "input": [
                    {"role": "user", "content": [{"type": "input_text", "text": "{{sample.output_text}}"}]}
                ],
                "labels": ["good", "bad"],
                "passing_labels": ["good"],
            },
            "model_sample": "x",
        },
    ),
    "rft multi": (
        "POST",
        "/v1/fine_tuning/alpha/graders/validate",
        {
            "grader": {
                "type": "multi",
                "name": "m",
                "graders": {"a": STRING_CHECK},
                "calculate_output": "a",
            }
        },
    ),
    "prune": ("POST", "/v1/prune", {"before": "2000-01-01T00:00:00Z", "run_id": "zz"}),
}


def lone_surrogates(node: Any, data: bool = False) -> Iterator[Any]:
    """`node` once per string in it (values, and keys of data mappings), that string with a lone surrogate."""
    if isinstance(node, str):
        yield LONE + node
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from ([*node[:i], changed, *node[i + 1 :]] for changed in lone_surrogates(child, data))
    elif isinstance(node, dict):
        for key, child in node.items():
            inner = data or key in DATA_MAPPINGS
            yield from ({**node, key: changed} for changed in lone_surrogates(child, inner))
            if data:
                yield {(LONE + k if k == key else k): v for k, v in node.items()}


@pytest.mark.parametrize("route", sorted(ROUTE_BODIES))
def test_a_lone_surrogate_in_any_caller_string_is_refused_before_any_work(
    client: TestClient, fake_backend: FakeBackend, route: str
) -> None:
    judgement = client.post("/v1/judge", json=group(2, run_id="r", group_key="g")).json()["judgement_id"]
    rubric = client.post(
        "/v1/rubrics", json={"conversation": [{"role": "user", "content": "q"}], "reference": "r"}
    )
    method, path, body = ROUTE_BODIES[route]
    path = path.format(judgement=judgement, rubric=rubric.json()["id"])
    body = json.loads(json.dumps(body).replace("{judgement}", judgement))
    assert client.request(method, path, json=body).status_code == 200  # the body as sent is fine
    calls, stored = len(fake_backend.requests), client.get("/v1/runs/r/judgements").json()["items"]
    variants = list(lone_surrogates(body))
    assert variants
    for variant in variants:
        response = client.request(
            method, path, content=json.dumps(variant), headers={"content-type": "application/json"}
        )
        assert response.status_code == 422, (variant, response.text)
        assert response.json()["error"]["code"] in ("invalid_request", "invalid_group"), response.text
    assert len(fake_backend.requests) == calls
    assert client.get("/v1/runs/r/judgements").json()["items"] == stored
    assert client.get(f"/v1/judgements/{judgement}/labels").status_code == 200


@pytest.mark.parametrize("path", ["/v1/judge", "/v1/judge/member"])
def test_a_step_no_store_can_hold_is_refused(client: TestClient, path: str) -> None:
    body = group(2, step=2**63)
    if path == "/v1/judge/member":
        answers = body.pop("answers")
        body = {**body, "group_key": "g", "group_size": 1, "answer": answers[0]}
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == "step"
    listed = client.get("/v1/runs/r/judgements", params={"step": 2**63})
    assert listed.status_code == 422 and "step" in listed.text
    assert client.post(path, json={**body, "step": 2**63 - 1}).status_code == 200


def test_stored_judgements_are_not_revalidated_against_new_input_rules() -> None:
    request = JudgeRequest.model_validate(group(1)).model_dump()
    request["answers"][0]["text"] = "old \x01 text"
    with pytest.raises(ValidationError):
        JudgeRequest.model_validate(request)
    assert JudgeRequest.model_validate(request, context=STORED).answers[0].text == "old \x01 text"


# --------------------------------------------------------------------------- empty answers


def test_empty_answers_are_judged_not_refused(client: TestClient, fake_backend: FakeBackend) -> None:
    body = group(3)
    body["answers"][1]["text"] = ""
    body["answers"][2]["text"] = "   "
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    answers = response.json()["answers"]
    assert [a["status"] for a in answers] == ["scored"] * 3
    prompt = fake_backend.requests[-1].messages[-1]["content"]
    assert '<answer id="a1"></answer>' in prompt  # shown to the judge as empty, under its id
    stored = client.get(f"/v1/judgements/{response.json()['judgement_id']}").json()
    assert stored["request"]["answers"][1]["text"] == ""


def test_empty_reference_and_conversation_text_are_allowed(client: TestClient) -> None:
    body = group(1) | {"reference": "", "conversation": [{"role": "user", "content": ""}]}
    assert client.post("/v1/judge", json=body).status_code == 200
