"""A jury for real: the service's in-process engine beside vLLM's own OpenAI server (`vllm serve`), both on
the embedded model, judging one group together; each judge's marks come back beside the aggregate, and
the server's own metrics show it was asked."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.engine.conftest import ENGINE_START_TIMEOUT_S, engine_service
from tests.engine.vllm_serve import START_TIMEOUT_S, VllmServe, prepared_model

pytestmark = pytest.mark.engine


def test_the_in_process_engine_and_a_vllm_server_judge_one_group_together(tmp_path: Path) -> None:
    server = VllmServe(tmp_path, prepared_model(), "jury")
    judges = [
        {"name": "own", "engine": "local"},
        {"name": "served", "base_url": f"{server.url}/v1", "model": "judge", "timeout_s": 600},
    ]
    service = engine_service(tmp_path, jury=json.dumps(judges), reason_max_chars=16)
    try:
        server.wait_for(f"{server.url}/health", timeout_s=START_TIMEOUT_S)
        service.start(timeout_s=ENGINE_START_TIMEOUT_S)
        with httpx.Client(base_url=service.url, timeout=900) as client:
            ready = client.get("/readyz").json()
            assert ready["jury"]["judges"] == {"own": "ready", "served": "ready"}, ready
            asked_before = server.requests_served()
            body = {
                "conversation": [{"role": "user", "content": "What is 12 + 30?"}],
                "reference": "42",
                "answers": [{"id": "right", "text": "42"}, {"id": "wrong", "text": "41"}],
                "grader": "jury",
                "jury": {"aggregate": "mean_minus_std", "std_factor": 0.5},
            }
            response = client.post("/v1/judge", json=body)
            assert response.status_code == 200, response.text
            judged = response.json()
            assert judged["judge_model"].startswith("jury(own=") and judged["judge_model"].endswith(
                "served=judge)"
            )
            assert server.requests_served() > asked_before
            for answer in judged["answers"]:
                verdict = answer["jury"]
                assert set(verdict["scores"]) | set(verdict["missing"]) == {"own", "served"}, verdict
                if answer["status"] == "scored":
                    assert verdict["aggregate"] == "mean_minus_std" and 0.0 <= answer["score"] <= 1.0
                else:
                    assert answer["score"] is None and answer["error"]
            assert any(len(a["jury"]["scores"]) == 2 for a in judged["answers"]), judged["answers"]
            stored = client.get(f"/v1/judgements/{judged['judgement_id']}").json()
            records = {r["name"]: r for r in stored["jury"]}
            assert records["own"]["raw_outputs"] and records["served"]["raw_outputs"]
            assert records["served"]["model"] == "judge" and records["served"]["usage"]["prompt_tokens"] > 0
            metrics = client.get("/metrics").text
            assert 'judge_jury_calls_total{judge="served"} 1.0' in metrics
            assert 'judge_jury_judge_ready{judge="served"} 1.0' in metrics
            print(f"\njury on the embedded model: {[(a['id'], a['jury']) for a in judged['answers']]}")
    finally:
        service.terminate()
        server.stop()
