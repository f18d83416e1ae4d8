"""Bad judges end to end: the HTTP API on the OpenAI-compatible backend over httpx.MockTransport.

Each fault the judge endpoint can produce must become either a clear HTTP error or unscored answers
with reasons (never a score of 0), and must be counted in /metrics.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.factory import build_backend
from judge_service.config import Settings
from judge_service.metrics import JudgeMetrics
from tests.api.conftest import group, wait_ready

MODEL = "judge-model"
CRITERIA = ["correctness", "helpfulness", "tone", "format"]
Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


def completion(content: str, finish_reason: str = "stop") -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "cmpl-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50},
        },
    )


def entry(mark: Any = 4, reason: Any = "fine") -> dict[str, Any]:
    return {c: {"reason": reason, "mark": mark} for c in CRITERIA}


def marks(*ids: str, mark: Any = 4) -> str:
    return json.dumps({i: entry(mark) for i in ids})


def script(*steps: httpx.Response | Exception | Handler) -> tuple[Handler, list[httpx.Request]]:
    """Chat completions answer each step in turn, repeating the last; /models lists MODEL."""
    remaining = list(steps)
    calls: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": MODEL, "max_model_len": 32768}]})
        if request.url.path == "/tokenize":
            return httpx.Response(404)
        calls.append(request)
        step = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return await step(request)
        return step

    return handler, calls


@contextmanager
def judge_app(tmp_path: Path, handler: Handler, **settings: Any) -> Iterator[TestClient]:
    """The service wired as in production (factory, metrics hooks) with the network replaced."""
    config = Settings(
        backend="openai",
        served_model_name=MODEL,
        home_dir=tmp_path,
        openai_backoff_base_s=0.001,
        openai_backoff_max_s=0.01,
        **settings,
    )
    metrics = JudgeMetrics()
    backend = build_backend(config, metrics, transport=httpx.MockTransport(handler))
    with TestClient(create_app(config, backend=backend, metrics=metrics)) as client:
        wait_ready(client)
        yield client


def metric(client: TestClient, name: str, **labels: str) -> float:
    """The value of one sample in /metrics (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = re.escape(name + (f"{{{wanted}}}" if labels else "")) + r" (\S+)"
    for line in client.get("/metrics").text.splitlines():
        if (found := re.fullmatch(pattern, _sorted_labels(line))) is not None:
            return float(found.group(1))
    return 0.0


def _sorted_labels(line: str) -> str:
    m = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line)
    if m is None:
        return line
    labels = ",".join(sorted(m.group(2).split(",")))
    return f"{m.group(1)}{{{labels}}} {m.group(3)}"


def assert_never_zero_for_failure(body: dict[str, Any]) -> None:
    for answer in body["answers"]:
        if answer["status"] == "unscored":
            assert answer["score"] is None and answer["criteria"] is None, answer
            assert answer["error"], answer
        else:
            assert answer["error"] is None and set(answer["criteria"]) == set(CRITERIA), answer
            assert all(m["mark"] in (1, 2, 3, 4, 5) for m in answer["criteria"].values())


# --------------------------------------------------------------------------- transport faults


def test_endpoint_down_at_start_is_reported_unavailable_and_judging_is_502(tmp_path: Path) -> None:
    """An endpoint not up at start (a router waiting for its engines) is asked again until it answers
    (readiness.py); meanwhile readiness knows why, and a group sent anyway gets the endpoint's failure."""

    async def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    config = Settings(
        backend="openai", served_model_name=MODEL, home_dir=tmp_path, openai_backoff_base_s=0.001
    )
    metrics = JudgeMetrics()
    backend = build_backend(config, metrics, transport=httpx.MockTransport(down))
    with TestClient(create_app(config, backend=backend, metrics=metrics)) as client:
        for _ in range(200):
            ready = client.get("/readyz")
            if ready.json()["status"] == "unavailable":
                break
        assert ready.status_code == 503
        # /readyz shows why only to a key with the read scope
        why = client.app.state.readiness.error  # type: ignore[attr-defined]
        assert "not started yet" in why and "ConnectError" in why
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        assert response.json()["error"]["code"] == "judge_unavailable"
        assert metric(client, "judge_retries_total", reason="http_transport") >= 3


def test_endpoint_down_while_judging_is_502_after_retries(tmp_path: Path) -> None:
    handler, calls = script(httpx.ConnectError("connection refused"))
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        error = response.json()["error"]
        assert error["code"] == "judge_unavailable"
        assert "after 4 attempts" in error["message"] and "ConnectError" in error["message"]
        assert error["details"]["attempts"] == 4
        assert len(calls) == 4
        assert metric(client, "judge_retries_total", reason="http_transport") == 3
        assert metric(client, "judge_backend_errors_total", code="judge_unavailable") == 1
        assert metric(client, "judge_requests_total", endpoint="/v1/judge", status="502", key="") == 1


def test_slow_judge_hits_the_group_deadline(tmp_path: Path) -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return completion(marks("a0", "a1"))

    handler, _ = script(slow)
    with judge_app(tmp_path, handler, group_deadline_s=0.3) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 504
        error = response.json()["error"]
        assert error["code"] == "judge_timeout"
        assert "0.3 s" in error["message"]
        assert metric(client, "judge_backend_errors_total", code="judge_timeout") == 1


def test_per_call_timeouts_are_retried_then_504(tmp_path: Path) -> None:
    handler, calls = script(httpx.ReadTimeout("read timed out"))
    with judge_app(tmp_path, handler, openai_transport_retries=2) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 504
        assert response.json()["error"]["code"] == "judge_timeout"
        assert len(calls) == 3
        assert metric(client, "judge_retries_total", reason="http_transport") == 2
        assert metric(client, "judge_backend_errors_total", code="judge_timeout") == 1


def test_5xx_then_success_is_judged(tmp_path: Path) -> None:
    handler, calls = script(
        httpx.Response(503, json={"error": {"message": "overloaded"}}),
        httpx.Response(500, text="boom"),
        completion(marks("a0", "a1")),
    )
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "ok" and [a["score"] for a in body["answers"]] == [0.75, 0.75]
        assert len(calls) == 3
        assert metric(client, "judge_retries_total", reason="http_5xx") == 2
        assert metric(client, "judge_backend_errors_total", code="judge_unavailable") == 0


def test_429_is_retried_honouring_retry_after(tmp_path: Path) -> None:
    handler, calls = script(
        httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"message": "slow down"}}),
        completion(marks("a0", "a1")),
    )
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 200, response.text
        assert len(calls) == 2
        assert metric(client, "judge_retries_total", reason="http_429") == 1


def test_persistent_429_is_502_naming_the_status(tmp_path: Path) -> None:
    handler, _ = script(httpx.Response(429, json={"error": {"message": "rate limited"}}))
    with judge_app(tmp_path, handler, openai_transport_retries=1) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        error = response.json()["error"]
        assert "HTTP 429" in error["message"] and "rate limited" in error["message"]
        assert error["details"]["last_status"] == 429
        assert metric(client, "judge_retries_total", reason="http_429") == 1
        assert metric(client, "judge_backend_errors_total", code="judge_unavailable") == 1


def test_non_retryable_4xx_fails_fast(tmp_path: Path) -> None:
    handler, calls = script(httpx.Response(400, json={"error": {"message": "bad schema"}}))
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        assert "HTTP 400" in response.json()["error"]["message"]
        assert len(calls) == 1


def test_completion_body_that_is_not_json_is_502(tmp_path: Path) -> None:
    handler, _ = script(httpx.Response(200, text="<html>proxy error</html>"))
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        assert "not JSON" in response.json()["error"]["message"]
        assert metric(client, "judge_backend_errors_total", code="judge_unavailable") == 1


# --------------------------------------------------------------------------- bad judge output


@contextmanager
def judged(
    tmp_path: Path, *replies: httpx.Response, n: int = 2
) -> Iterator[tuple[dict[str, Any], TestClient]]:
    handler, calls = script(*replies)
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(n))
        assert response.status_code == 200, response.text
        body = response.json()
        assert_never_zero_for_failure(body)
        assert body["attempts"] == len(calls)
        stored = client.get(f"/v1/judgements/{body['judgement_id']}").json()
        assert len(stored["raw_outputs"]) == len(calls)
        yield body, client


def test_truncated_json_is_retried_then_unscored_with_the_reason(tmp_path: Path) -> None:
    cut = marks("a0", "a1")[:-40]
    with judged(tmp_path, completion(cut, finish_reason="length")) as (body, client):
        assert body["status"] == "failed" and body["attempts"] == 3
        for answer in body["answers"]:
            assert "not valid JSON" in answer["error"]
            assert "cut off at the output token limit" in answer["error"]
        assert metric(client, "judge_output_problems_total", kind="truncated") == 3
        assert metric(client, "judge_output_problems_total", kind="unreadable") == 3
        assert metric(client, "judge_retries_total", reason="invalid_output") == 2
        assert metric(client, "judge_parse_failures_total") == 3
        assert metric(client, "judge_unscored_answers_total", grader="judge") == 2
        assert metric(client, "judge_groups_total", grader="judge", status="failed") == 1


def test_text_that_is_not_json_is_unscored(tmp_path: Path) -> None:
    with judged(tmp_path, completion("Answer a0 is clearly the best, I give it 5.")) as (body, client):
        assert body["status"] == "failed"
        assert all("not valid JSON" in a["error"] for a in body["answers"])
        assert metric(client, "judge_output_problems_total", kind="unreadable") == 3


def test_bad_reply_recovered_by_a_retry(tmp_path: Path) -> None:
    with judged(tmp_path, completion("nope"), completion(marks("a0", "a1"))) as (body, client):
        assert body["status"] == "ok" and body["attempts"] == 2
        assert metric(client, "judge_retries_total", reason="invalid_output") == 1


def test_too_few_answers_leaves_the_missing_ones_unscored(tmp_path: Path) -> None:
    with judged(tmp_path, completion(marks("a0")), n=3) as (body, client):
        assert body["status"] == "partial"
        a0, a1, a2 = body["answers"]
        assert a0["status"] == "scored" and a0["score"] == 0.75
        assert a1["status"] == a2["status"] == "unscored"
        assert "no entry for this answer" in a1["error"]
        assert metric(client, "judge_output_problems_total", kind="missing_answer") == 3


def test_too_many_and_unknown_answers_are_ignored(tmp_path: Path) -> None:
    with judged(tmp_path, completion(marks("a0", "a1", "zz", "a9"))) as (body, client):
        assert body["status"] == "ok" and body["attempts"] == 1
        assert [a["id"] for a in body["answers"]] == ["a0", "a1"]
        assert metric(client, "judge_output_problems_total", kind="unknown_answer") == 1


def test_duplicate_ids_in_a_list_are_unscored(tmp_path: Path) -> None:
    reply = json.dumps([{"id": "a0", **entry(5)}, {"id": "a0", **entry(2)}, {"id": "a1", **entry(3)}])
    with judged(tmp_path, completion(reply)) as (body, client):
        a0, a1 = body["answers"]
        assert a0["status"] == "unscored" and "more than one entry" in a0["error"]
        assert a1["status"] == "scored" and a1["score"] == 0.5
        assert metric(client, "judge_output_problems_total", kind="duplicate_answer") == 3


def test_duplicate_keys_in_an_object_are_unscored_not_last_wins(tmp_path: Path) -> None:
    one = json.dumps(entry(5))
    other = json.dumps(entry(2))
    reply = f'{{"a0": {one}, "a1": {other}, "a0": {other}}}'
    with judged(tmp_path, completion(reply)) as (body, client):
        a0, a1 = body["answers"]
        assert a0["status"] == "unscored" and "more than one entry" in a0["error"]
        assert a1["status"] == "scored"
        assert metric(client, "judge_output_problems_total", kind="duplicate_answer") == 3


def test_marks_out_of_range_are_unscored(tmp_path: Path) -> None:
    for bad in (0, 6, -1, 3.5, "five", True, None):
        reply = json.dumps({"a0": entry(bad), "a1": entry(3)})
        with judged(tmp_path, completion(reply)) as (body, client):
            a0, a1 = body["answers"]
            assert a0["status"] == "unscored", bad
            assert "expected an integer 1-5" in a0["error"], a0["error"]
            assert a1["status"] == "scored" and a1["score"] == 0.5
            assert metric(client, "judge_output_problems_total", kind="invalid_mark") == 3


def test_missing_reason_or_criterion_is_unscored(tmp_path: Path) -> None:
    no_reason = {"a0": entry(4, reason=""), "a1": entry(4)}
    no_tone = {"a0": {c: v for c, v in entry(4).items() if c != "tone"}, "a1": entry(4)}
    for reply, kind, hint in (
        (no_reason, "missing_reason", "has no reason"),
        (no_tone, "missing_criterion", "'tone' is missing"),
    ):
        with judged(tmp_path, completion(json.dumps(reply))) as (body, client):
            a0, a1 = body["answers"]
            assert a0["status"] == "unscored" and hint in a0["error"]
            assert a1["status"] == "scored"
            assert metric(client, "judge_output_problems_total", kind=kind) == 3


def test_null_content_is_a_backend_error_not_a_score(tmp_path: Path) -> None:
    handler, _ = script(
        httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": None}}]})
    )
    with judge_app(tmp_path, handler) as client:
        response = client.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        assert "content is missing or null" in response.json()["error"]["message"]
