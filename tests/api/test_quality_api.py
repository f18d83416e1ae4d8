"""POST /v1/quality/calibration and /v1/quality/agreement, inline and over stored runs (fake judge)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import group

CRITERION = {"name": "correctness", "description": "right", "mark_1": "wrong", "mark_5": "right"}


def test_calibration_of_inline_groups(client: TestClient) -> None:
    body = {"groups": [[1.0, 0.75, 0.5, 0.25], [0.6, 0.6, None], [0.9], [None, None]]}
    report = client.post("/v1/quality/calibration", json=body).json()
    assert report["recommendation"]["threshold"] == 0.55
    assert (report["flat_groups"], report["too_few_scored_groups"], report["unscored_answers"]) == (1, 2, 3)
    assert len(report["thresholds"]) == 10


def test_calibration_of_a_stored_run_by_step_and_fingerprint(client: TestClient) -> None:
    made = [client.post("/v1/judge", json=group(4, run_id="cal", step=i % 2)).json() for i in range(4)]
    other = client.post("/v1/judge", json=group(4, run_id="cal", step=0, criteria=[CRITERION])).json()
    everything = client.post("/v1/quality/calibration", json={"run_id": "cal"}).json()
    assert (everything["groups"], everything["scored_answers"]) == (5, 20)
    step1 = client.post("/v1/quality/calibration", json={"run_id": "cal", "step": 1}).json()
    step1_scores = [a["score"] for j in made[1::2] for a in j["answers"]]
    assert step1["groups"] == 2
    assert step1["thresholds"][0]["passed"] == sum(1 for s in step1_scores if s >= 0.5)
    only = client.post(
        "/v1/quality/calibration", json={"run_id": "cal", "fingerprint": other["grader_fingerprint"]}
    ).json()
    assert only["groups"] == 1


@pytest.mark.parametrize(
    "body", [{}, {"groups": [[0.5]], "run_id": "r"}, {"groups": []}, {"run_id": "bad id!"}]
)
def test_calibration_request_is_validated(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post("/v1/quality/calibration", json=body)
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_agreement_with_inline_scores(client: TestClient) -> None:
    body = {
        "human": [
            {"group_key": "g1", "human": {"a": 5, "b": 3, "c": 1}, "scale": [1, 5]},
            {"group_key": "g2", "human": {"a": 1, "b": 2}, "kind": "rank"},
            {"group_key": "g3", "human": {"a": 1}},
        ],
        "scores": {"g1": {"a": 1.0, "b": 0.5, "c": 0.0}, "g2": {"a": 0.2, "b": 0.8}},
    }
    report = client.post("/v1/quality/agreement", json=body).json()
    assert report["unmatched"] == ["g3"] and report["matched_groups"] == 2
    assert report["mean_kendall_tau_b"] == pytest.approx(0.0)  # g1 agrees fully, g2 is reversed
    assert report["pairwise_accuracy"] == pytest.approx(3 / 4)
    assert report["mean_absolute_error"] == pytest.approx(0.0) and report["mae_answers"] == 3


def test_agreement_against_stored_judgements_by_id_and_by_group_key(client: TestClient) -> None:
    by_id = client.post("/v1/judge", json=group(3)).json()
    keyed = client.post("/v1/judge", json=group(3, run_id="agr", group_key="q1")).json()
    mirror = lambda j: {a["id"]: a["score"] for a in j["answers"]}  # noqa: E731
    body = {
        "human": [
            {"judgement_id": by_id["judgement_id"], "human": mirror(by_id)},
            {"group_key": "q1", "human": mirror(keyed)},
            {"judgement_id": "0" * 32, "human": {"a0": 0.5}},
        ],
        "run_id": "agr",
    }
    report = client.post("/v1/quality/agreement", json=body).json()
    assert report["matched_groups"] == 2 and report["unmatched"] == ["0" * 32]
    assert report["mean_absolute_error"] == 0.0
    for group_report in report["per_group"]:
        assert group_report["pairwise_accuracy"] in (1.0, None)


def test_agreement_errors_are_422(client: TestClient) -> None:
    no_run = {"human": [{"group_key": "q1", "human": {"a0": 1}}]}
    response = client.post("/v1/quality/agreement", json=no_run)
    assert response.status_code == 422 and "run_id" in response.json()["error"]["message"]
    off_scale = {"human": [{"group_key": "g", "human": {"a": 5}}], "scores": {"g": {"a": 0.5}}}
    response = client.post("/v1/quality/agreement", json=off_scale)
    assert response.status_code == 422 and "outside the scale" in response.json()["error"]["message"]
    both_keys = {"human": [{"group_key": "g", "judgement_id": "j", "human": {"a": 1}}]}
    assert client.post("/v1/quality/agreement", json=both_keys).status_code == 422


def test_openapi_lists_the_quality_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/quality/calibration", "/v1/quality/agreement", "/v1/regrade"} <= set(paths)


def test_non_finite_scores_are_refused(client: TestClient) -> None:
    response = client.post(
        "/v1/quality/calibration",
        content=b'{"groups": [[NaN, 0.5]]}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422
