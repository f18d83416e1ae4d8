"""The HTTP API on the scripted fake judge: contract, storage round trip, errors, metrics."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from judge_service.errors import JudgeBackendError
from judge_service.judging.llm.prompt import PromptRenderer
from tests.api.conftest import group, make_client, wait_ready

CRITERIA = ["correctness", "helpfulness", "tone", "format"]


def test_judge_returns_marks_for_every_answer_and_criterion(client: TestClient) -> None:
    response = client.post("/v1/judge", json=group(4, run_id="run-1", step=3, group_key="q17"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert body["judge_model"] == "fake-judge"
    assert body["prompt_version"].startswith("judge_group@")
    assert (body["run_id"], body["step"], body["group_key"]) == ("run-1", 3, "q17")
    assert [a["id"] for a in body["answers"]] == ["a0", "a1", "a2", "a3"]
    for answer in body["answers"]:
        assert answer["status"] == "scored"
        assert sorted(answer["criteria"]) == sorted(CRITERIA)
        marks = answer["criteria"].values()
        for mark in marks:
            assert 1 <= mark["mark"] <= 5
            assert mark["score"] == (mark["mark"] - 1) / 4
            assert mark["reason"]
        expected = sum(m["score"] for m in marks) / 4
        assert abs(answer["score"] - expected) < 1e-6
    assert body["usage"]["judge_calls"] == 1 and body["attempts"] == 1
    assert body["usage"]["prompt_tokens"] > 0


def test_weights_shape_the_overall_score(client: TestClient) -> None:
    criteria = [
        {"name": "correctness", "description": "right", "mark_1": "wrong", "mark_5": "right", "weight": 3},
        {"name": "tone", "description": "kind", "mark_1": "rude", "mark_5": "kind", "weight": 1},
    ]
    body = client.post("/v1/judge", json=group(2, criteria=criteria)).json()
    for answer in body["answers"]:
        c = answer["criteria"]
        assert sorted(c) == ["correctness", "tone"]
        expected = (3 * c["correctness"]["score"] + c["tone"]["score"]) / 4
        assert abs(answer["score"] - expected) < 1e-6


def test_judgement_is_stored_and_fetched_back(client: TestClient) -> None:
    body = client.post("/v1/judge", json=group(3, run_id="run-7", step=1)).json()
    fetched = client.get(f"/v1/judgements/{body['judgement_id']}")
    assert fetched.status_code == 200
    stored = fetched.json()
    assert stored["answers"] == body["answers"]
    assert stored["request"]["reference"] == group()["reference"]
    assert len(stored["raw_outputs"]) == 1 and json.loads(stored["raw_outputs"][0])


def test_run_listing_pages_and_filters_by_step(client: TestClient) -> None:
    ids = [
        client.post("/v1/judge", json=group(1, run_id="run-p", step=i % 2)).json()["judgement_id"]
        for i in range(5)
    ]
    client.post("/v1/judge", json=group(1, run_id="other", step=0))
    first = client.get("/v1/runs/run-p/judgements", params={"limit": 2}).json()
    assert [i["judgement_id"] for i in first["items"]] == ids[:2]
    rest = client.get(
        "/v1/runs/run-p/judgements", params={"limit": 10, "cursor": first["next_cursor"]}
    ).json()
    assert [i["judgement_id"] for i in rest["items"]] == ids[2:]
    assert rest["next_cursor"] is None
    step1 = client.get("/v1/runs/run-p/judgements", params={"step": 1}).json()
    assert [i["judgement_id"] for i in step1["items"]] == [ids[1], ids[3]]


def test_unknown_judgement_is_404(client: TestClient) -> None:
    response = client.get("/v1/judgements/" + "0" * 32)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_bad_input_gets_a_422_that_says_what_to_fix(client: TestClient) -> None:
    cases = [
        (group(2) | {"answers": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}, "unique"),
        (group(2) | {"answers": []}, "answers"),
        (group(2) | {"surprise": 1}, "surprise"),
        (group(2) | {"answers": [{"id": "bad id!", "text": "x"}]}, "answers.0.id"),
        (group(65), "answers"),
        (group(2) | {"conversation": []}, "conversation"),
        (group(2) | {"step": -1}, "step"),
    ]
    for payload, hint in cases:
        response = client.post("/v1/judge", json=payload)
        assert response.status_code == 422, payload
        error = response.json()["error"]
        assert error["code"] == "invalid_request"
        assert hint in error["message"], error["message"]


def test_malformed_json_body_is_422(client: TestClient) -> None:
    response = client.post("/v1/judge", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"


def test_invalid_judge_output_is_retried_then_unscored_never_zero(tmp_path: Path) -> None:
    partial = json.dumps({"a0": {c: {"reason": "fine", "mark": 4} for c in CRITERIA}})
    backend = FakeBackend(script=["not json at all", partial, partial])
    with make_client(tmp_path, backend) as c:
        wait_ready(c)
        body = c.post("/v1/judge", json=group(2)).json()
        assert body["status"] == "partial"
        assert body["attempts"] == 3
        scored, unscored = body["answers"]
        assert scored["status"] == "scored" and scored["score"] == 0.75
        assert unscored["status"] == "unscored" and unscored["score"] is None
        assert "no entry" in unscored["error"]
        metrics = c.get("/metrics").text
        assert "judge_parse_failures_total 3.0" in metrics
        assert 'judge_retries_total{reason="invalid_output"} 2.0' in metrics
        assert 'judge_unscored_answers_total{grader="judge"} 1.0' in metrics
        stored = c.get(f"/v1/judgements/{body['judgement_id']}").json()
        assert stored["raw_outputs"][0] == "not json at all"


def test_retry_recovers_a_complete_judgement(tmp_path: Path) -> None:
    good = json.dumps({f"a{i}": {c: {"reason": "ok", "mark": 5} for c in CRITERIA} for i in range(2)})
    with make_client(tmp_path, FakeBackend(script=["{broken", good])) as c:
        wait_ready(c)
        body = c.post("/v1/judge", json=group(2)).json()
        assert body["status"] == "ok" and body["attempts"] == 2
        assert [a["score"] for a in body["answers"]] == [1.0, 1.0]


def test_backend_failure_is_a_502_with_a_code(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(script=[JudgeBackendError("endpoint down")])) as c:
        wait_ready(c)
        response = c.post("/v1/judge", json=group(2))
        assert response.status_code == 502
        assert response.json()["error"] == {
            "code": "judge_unavailable",
            "message": "endpoint down",
            "details": None,
        }
        assert 'judge_backend_errors_total{code="judge_unavailable"} 1.0' in c.get("/metrics").text


def test_slow_judge_hits_the_group_deadline_with_504(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(latency_s=2.0), group_deadline_s=0.2) as c:
        wait_ready(c)
        response = c.post("/v1/judge", json=group(2))
        assert response.status_code == 504
        assert response.json()["error"]["code"] == "judge_timeout"


def test_group_over_the_context_window_is_422(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(max_context_tokens=600)) as c:
        wait_ready(c)
        response = c.post("/v1/judge", json=group(8))
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "prompt_too_long"
        assert error["details"]["limit"] == 600


class CountingBackend(FakeBackend):
    """A fake judge that counts the prompts it was asked to measure."""

    counted = 0

    async def count_prompt_tokens(self, messages: list[dict[str, str]], thinking: Any = None) -> int | None:
        self.counted += 1
        return await super().count_prompt_tokens(messages)


def test_a_per_answer_group_over_the_context_is_refused_after_one_count(tmp_path: Path) -> None:
    """Every per-answer prompt holds the whole group: the first one's count decides for all of them."""
    backend = CountingBackend(max_context_tokens=600)
    with make_client(tmp_path, backend) as c:
        wait_ready(c)
        response = c.post("/v1/judge", json={**group(8), "decoding": "per_answer"})
        assert response.status_code == 422 and response.json()["error"]["code"] == "prompt_too_long"
    assert backend.counted == 1


def test_a_large_groups_prompts_are_rendered_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered_in: list[str] = []
    original = PromptRenderer.render_per_answer

    def recording(self: PromptRenderer, *args: Any, **kwargs: Any) -> Any:
        rendered_in.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PromptRenderer, "render_per_answer", recording)
    big = group(8)
    for answer in big["answers"]:
        answer["text"] = "word " * 3000  # 8 prompts x 8 answers x 15,000 characters: over the threshold
    with make_client(tmp_path, FakeBackend()) as c:
        wait_ready(c)
        loop_thread = c.portal.call(lambda: threading.current_thread().name)  # type: ignore[union-attr]
        assert c.post("/v1/judge", json={**big, "decoding": "per_answer"}).status_code == 200
        assert c.post("/v1/judge", json={**group(2), "decoding": "per_answer"}).status_code == 200
    assert rendered_in[0] != loop_thread and rendered_in[1] == loop_thread  # a small group stays


def test_not_ready_is_503_and_readyz_says_loading(tmp_path: Path) -> None:
    class NeverReady(FakeBackend):
        async def start(self) -> None:
            import asyncio

            await asyncio.sleep(3600)

    with make_client(tmp_path, NeverReady()) as c:
        assert c.get("/healthz").status_code == 200
        assert c.get("/readyz").json() == {"status": "loading", "backend": "fake"}
        response = c.post("/v1/judge", json=group(1))
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "not_ready"


def test_failed_start_is_reported_on_readyz(tmp_path: Path) -> None:
    class Broken(FakeBackend):
        async def start(self) -> None:
            raise RuntimeError("no such model")

    with make_client(tmp_path, Broken()) as c:
        for _ in range(100):
            ready = c.get("/readyz")
            if ready.json()["status"] == "failed":
                break
        assert ready.status_code == 503
        assert "error" not in ready.json()  # why is for a key with the read scope: here, in the log
        assert "no such model" in c.app.state.readiness.error  # type: ignore[attr-defined]


def test_metrics_show_requests_latency_group_size_and_tokens(client: TestClient) -> None:
    client.post("/v1/judge", json=group(4))
    client.post("/v1/judge", json={"bad": 1})
    text = client.get("/metrics").text
    assert 'judge_requests_total{endpoint="/v1/judge",key="",status="200"} 1.0' in text
    assert 'judge_requests_total{endpoint="/v1/judge",key="",status="422"} 1.0' in text
    assert 'judge_group_seconds_count{grader="judge"} 1.0' in text
    assert "judge_answers_per_group_sum 4.0" in text
    assert "judge_prompt_tokens_total" in text and "judge_completion_tokens_total" in text
    assert "judge_engine_ready 1.0" in text
    assert "judge_queue_depth 0.0" in text


def test_openapi_lists_the_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/judge", "/v1/judgements/{judgement_id}", "/v1/runs/{run_id}/judgements", "/metrics"} <= set(
        paths
    )


def test_batch_grades_every_group_and_isolates_failures(tmp_path: Path) -> None:
    good = json.dumps({"a0": {c: {"reason": "ok", "mark": 5} for c in CRITERIA}})
    backend = FakeBackend(script=[good, JudgeBackendError("endpoint down"), good])
    with make_client(tmp_path, backend, parse_retries=0) as c:
        wait_ready(c)
        response = c.post("/v1/judge/batch", json={"groups": [group(1, step=i) for i in range(3)]})
        assert response.status_code == 200, response.text
        results = response.json()["results"]
        assert len(results) == 3
        failed = [r for r in results if r["error"] is not None]
        assert len(failed) == 1 and failed[0]["error"]["code"] == "judge_unavailable"
        assert failed[0]["judgement"] is None
        ok = [r["judgement"] for r in results if r["judgement"] is not None]
        assert [j["answers"][0]["score"] for j in ok] == [1.0, 1.0]
        for judgement in ok:
            assert c.get(f"/v1/judgements/{judgement['judgement_id']}").status_code == 200


def test_batch_keeps_request_order(client: TestClient) -> None:
    groups = [group(1, step=i, group_key=f"g{i}") for i in range(10)]
    results = client.post("/v1/judge/batch", json={"groups": groups}).json()["results"]
    assert [r["judgement"]["group_key"] for r in results] == [f"g{i}" for i in range(10)]


def test_empty_batch_is_422(client: TestClient) -> None:
    response = client.post("/v1/judge/batch", json={"groups": []})
    assert response.status_code == 422
    assert "groups" in response.json()["error"]["message"]
