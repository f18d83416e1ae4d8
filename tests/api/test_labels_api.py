"""A person's labels through the API and the client: stored per labeler, validated against the group,
read back per group and per run (the JSONL `judge-service agreement` reads), and the agreement per
grader fingerprint, regrades included."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from judge_service.client import JudgeClient
from judge_service.quality.agreement import labels_from_jsonl
from tests.api.conftest import group, make_client, wait_ready


def judged(client: TestClient, **extra: object) -> dict:
    reply = client.post("/v1/judge", json=group(4, run_id="labelled", step=0, **extra))
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_labels_are_stored_per_labeler_and_replace_that_labelers_earlier(client: TestClient) -> None:
    body = judged(client)
    jid = body["judgement_id"]
    first = {"human": {"a0": 5, "a1": 1}, "kind": "score", "scale": [1, 5], "labeler": "ann"}
    assert client.put(f"/v1/judgements/{jid}/labels", json=first).status_code == 200
    second = {"human": {"a0": 1, "a1": 2, "a2": 3}, "kind": "rank", "labeler": "bob"}
    reply = client.put(f"/v1/judgements/{jid}/labels", json=second)
    assert [(i["labeler"], i["kind"]) for i in reply.json()["items"]] == [("ann", "score"), ("bob", "rank")]
    again = {**first, "human": {"a0": 4}}
    client.put(f"/v1/judgements/{jid}/labels", json=again)
    items = client.get(f"/v1/judgements/{jid}/labels").json()["items"]
    assert items[0] == {
        "judgement_id": jid,
        "group_key": None,
        "labeler": "ann",
        "human": {"a0": 4.0},
        "kind": "score",
        "scale": [1.0, 5.0],
    }
    # The run's labels, as the agreement command's input file.
    lines = client.get("/v1/runs/labelled/labels", params={"format": "jsonl"}).text.splitlines()
    parsed = labels_from_jsonl(lines)
    assert [(p.judgement_id, p.labeler) for p in parsed] == [(jid, "ann"), (jid, "bob")]


def test_labels_that_do_not_fit_the_group_get_a_422_saying_what_to_fix(client: TestClient) -> None:
    jid = judged(client)["judgement_id"]
    cases = [
        ({"human": {"zz": 1}}, "labels name answers this judgement does not have: zz"),
        ({"human": {"a0": 7}, "scale": [1, 5]}, "scores must lie on the scale 1-5"),
        ({"human": {"a0": 1.5}, "kind": "rank"}, "ranks must be whole numbers from 1 (best) to 4"),
        ({"human": {"a0": 1}, "labeler": "<script>"}, "labeler"),
        ({"human": {}}, "human"),
    ]
    for body, message in cases:
        reply = client.put(f"/v1/judgements/{jid}/labels", json=body)
        assert reply.status_code == 422, body
        assert message in reply.text, reply.text
    assert client.put("/v1/judgements/" + "0" * 32 + "/labels", json={"human": {"a0": 1}}).status_code == 404
    assert client.get(f"/v1/judgements/{jid}/labels").json()["items"] == []


def test_agreement_per_fingerprint_counts_regrades_of_the_labelled_groups(client: TestClient) -> None:
    body = judged(client)
    jid = body["judgement_id"]
    by_score = sorted(body["answers"], key=lambda a: -a["score"])
    ranks = {a["id"]: float(rank) for rank, a in enumerate(by_score, start=1)}  # agrees with the grader
    client.put(f"/v1/judgements/{jid}/labels", json={"human": ranks, "kind": "rank", "labeler": "ann"})
    regraded = client.post("/v1/regrade", json={"judgement_ids": [jid], "orders": 2}).json()
    new_fingerprint = regraded["results"][0]["judgement"]["grader_fingerprint"]
    report = client.get("/v1/runs/labelled/agreement").json()
    by_fingerprint = {r["fingerprint"]: r for r in report}
    assert set(by_fingerprint) == {body["grader_fingerprint"], new_fingerprint}
    own = by_fingerprint[body["grader_fingerprint"]]
    assert own["report"]["matched_groups"] == 1 and own["report"]["pairwise_accuracy"] == 1.0
    assert own["worst"][0]["key"] == jid


def test_the_client_reads_and_writes_labels(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend()) as service:
        wait_ready(service)
        jid = judged(service)["judgement_id"]
        client = JudgeClient(
            base_url="http://test", transport=httpx.MockTransport(lambda r: _forward(service, r))
        )
        stored = client.put_labels(jid, {"human": {"a0": 1, "a1": 2}, "kind": "rank", "labeler": "cli"})
        assert [label.labeler for label in stored.items] == ["cli"]
        assert client.labels(jid).items[0].human == {"a0": 1.0, "a1": 2.0}
        assert [label.judgement_id for label in client.run_labels("labelled").items] == [jid]
        assert client.run_agreement("labelled")[0].report.groups == 1
        runs = list(client.runs())
        assert [r.run_id for r in runs] == ["labelled"]
        assert client.run_steps("labelled").items[0].groups == 1


def _forward(service: TestClient, request: httpx.Request) -> httpx.Response:
    reply = service.request(
        request.method, request.url.raw_path.decode(), content=request.content, headers=dict(request.headers)
    )
    return httpx.Response(reply.status_code, content=reply.content, headers=reply.headers)
