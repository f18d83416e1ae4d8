"""Grader fingerprints and POST /v1/regrade on the fake judge."""

from __future__ import annotations

from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from tests.api.conftest import group

CRITERION = {"name": "correctness", "description": "right", "mark_1": "wrong", "mark_5": "right"}


def test_fingerprint_is_returned_stored_and_tracks_the_configuration(client: TestClient) -> None:
    first = client.post("/v1/judge", json=group(3)).json()
    same = client.post("/v1/judge", json=group(2, run_id="r", seed=4)).json()
    other = client.post("/v1/judge", json=group(3, criteria=[CRITERION])).json()
    assert len(first["grader_fingerprint"]) == 16
    assert same["grader_fingerprint"] == first["grader_fingerprint"] != other["grader_fingerprint"]
    stored = client.get(f"/v1/judgements/{first['judgement_id']}").json()
    assert stored["grader_fingerprint"] == first["grader_fingerprint"] and stored["regrade_of"] is None


def test_regrade_by_ids_writes_new_linked_judgements(client: TestClient) -> None:
    olds = [client.post("/v1/judge", json=group(4, run_id="r", step=i)).json() for i in range(2)]
    response = client.post(
        "/v1/regrade", json={"judgement_ids": [o["judgement_id"] for o in olds], "criteria": [CRITERION]}
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["regrade_of"] for r in results] == [o["judgement_id"] for o in olds]
    for old, item in zip(olds, results, strict=True):
        new = item["judgement"]
        assert item["error"] is None and new["judgement_id"] != old["judgement_id"]
        assert new["regrade_of"] == old["judgement_id"]
        assert new["grader_fingerprint"] != old["grader_fingerprint"]
        assert (new["run_id"], new["step"]) == ("r", old["step"])
        assert new["answer_orders"] == old["answer_orders"]  # same seed: same order shown
        assert all(sorted(a["criteria"]) == ["correctness"] for a in new["answers"])
        stored = client.get(f"/v1/judgements/{new['judgement_id']}").json()
        assert stored["regrade_of"] == old["judgement_id"]
        assert [c["name"] for c in stored["request"]["criteria"]] == ["correctness"]
    # The old judgement is untouched.
    assert client.get(f"/v1/judgements/{olds[0]['judgement_id']}").json()["answers"] == olds[0]["answers"]


def test_regrade_a_run_page_by_page_and_only_its_originals(client: TestClient) -> None:
    olds = [
        client.post("/v1/judge", json=group(2, run_id="run-x", step=i)).json()["judgement_id"]
        for i in range(3)
    ]
    first = client.post("/v1/regrade", json={"run_id": "run-x", "grader": "similarity", "limit": 2}).json()
    assert [r["regrade_of"] for r in first["results"]] == olds[:2] and first["next_cursor"]
    assert all(r["judgement"]["grader"] == "similarity" for r in first["results"])
    rest = client.post(
        "/v1/regrade", json={"run_id": "run-x", "grader": "similarity", "cursor": first["next_cursor"]}
    ).json()
    assert [r["regrade_of"] for r in rest["results"]] == olds[2:] and rest["next_cursor"] is None
    # The run now also holds the three regrades; regrading it again picks the originals only.
    again = client.post("/v1/regrade", json={"run_id": "run-x", "as_run_id": "run-x-v2"}).json()
    assert [r["regrade_of"] for r in again["results"]] == olds
    moved = client.get("/v1/runs/run-x-v2/judgements").json()["items"]
    assert [j["regrade_of"] for j in moved] == olds


def test_regrade_failures_are_per_group(client: TestClient) -> None:
    old = client.post("/v1/judge", json=group(2)).json()["judgement_id"]
    results = client.post("/v1/regrade", json={"judgement_ids": [old, "f" * 32]}).json()["results"]
    assert results[0]["judgement"]["regrade_of"] == old
    assert results[1]["error"]["code"] == "not_found" and results[1]["judgement"] is None
    bad = client.post("/v1/regrade", json={"judgement_ids": [old], "grader": "nonsense"}).json()["results"]
    assert bad[0]["error"]["code"] == "invalid_group" and "nonsense" in bad[0]["error"]["message"]


def test_regrade_request_is_validated(client: TestClient) -> None:
    for body in (
        {},
        {"judgement_ids": ["a"], "run_id": "r"},
        {"run_id": "r", "orders": 9},
        {"judgement_ids": []},
    ):
        response = client.post("/v1/regrade", json=body)
        assert response.status_code == 422, body
        assert response.json()["error"]["code"] == "invalid_request"


def test_a_retried_regrade_with_an_idempotency_key_rescores_each_group_once(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    olds = [
        client.post("/v1/judge", json=group(3, run_id="ik", step=i)).json()["judgement_id"] for i in range(2)
    ]
    body = {"judgement_ids": olds, "criteria": [CRITERION]}
    first = client.post("/v1/regrade", json=body, headers={"Idempotency-Key": "regrade-1"}).json()["results"]
    calls = len(fake_backend.requests)
    # A retry, with one more group: the two re-scored ones are replayed, only the new one is judged.
    extra = client.post("/v1/judge", json=group(3, run_id="ik", step=9)).json()["judgement_id"]
    calls += 1
    retry = client.post(
        "/v1/regrade", json=body | {"judgement_ids": [*olds, extra]}, headers={"Idempotency-Key": "regrade-1"}
    ).json()["results"]
    assert [r["judgement"]["judgement_id"] for r in retry[:2]] == [
        r["judgement"]["judgement_id"] for r in first
    ]
    assert retry[2]["judgement"]["regrade_of"] == extra and len(fake_backend.requests) == calls + 1
    for old, item in zip(olds, first, strict=True):  # a keyed regrade is linked like any other
        assert client.get(f"/v1/judgements/{item['judgement']['judgement_id']}").json()["regrade_of"] == old
    # Other overrides for the same groups under the same key: a conflict per group, nothing judged.
    other = client.post(
        "/v1/regrade",
        json={"judgement_ids": olds, "grader": "similarity"},
        headers={"Idempotency-Key": "regrade-1"},
    ).json()["results"]
    assert [r["error"]["code"] for r in other] == ["conflict", "conflict"]
    assert "regrade of" in other[0]["error"]["message"] and len(fake_backend.requests) == calls + 1
    # Without a key every call re-scores anew.
    unkeyed = [client.post("/v1/regrade", json=body).json()["results"][0] for _ in range(2)]
    assert unkeyed[0]["judgement"]["judgement_id"] != unkeyed[1]["judgement"]["judgement_id"]
