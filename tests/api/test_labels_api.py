"""A person's labels through the API and the client: stored per labeler, validated against the group,
read back per group and per run (the JSONL `judge-service agreement` reads), and the agreement per
grader fingerprint, regrades included."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
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


LABEL_ROUTES = ("/v1/judgements/{jid}/labels", "/v1/runs/labelled/labels", "/v1/runs/labelled/agreement")
LABEL_PAGES = ("/ui/judgements/{jid}", "/ui/runs/labelled")


def assert_label_routes_answer(client: TestClient, jid: str, headers: dict[str, str] | None = None) -> None:
    """The five routes that read stored labels answer 200."""
    for path in LABEL_ROUTES + LABEL_PAGES:
        reply = client.get(path.format(jid=jid), headers=headers)
        assert reply.status_code == 200, (path, reply.text[:300])


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"human": {"a": 1, "b": 0}, "scale": [0, 1e999]}', "scale.1"),
        ('{"human": {"a0": 1}, "scale": [-Infinity, 1]}', "scale.0"),
        ('{"human": {"a0": 1e999}}', "human.a0"),
        ('{"human": {"a0": NaN}, "kind": "rank"}', "human.a0"),
    ],
)
def test_a_label_that_is_not_a_finite_number_is_refused_and_nothing_breaks(
    client: TestClient, raw: str, field: str
) -> None:
    jid = judged(client)["judgement_id"]
    assert (
        client.put(f"/v1/judgements/{jid}/labels", json={"human": {"a0": 1}, "labeler": "ann"}).status_code
        == 200
    )
    reply = client.put(
        f"/v1/judgements/{jid}/labels", content=raw, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["details"][0]["field"] == field
    assert "finite number" in reply.json()["error"]["message"]
    assert [i["labeler"] for i in client.get(f"/v1/judgements/{jid}/labels").json()["items"]] == ["ann"]
    assert_label_routes_answer(client, jid)


def test_a_mark_of_infinity_on_the_labels_form_is_refused(client: TestClient) -> None:
    jid = judged(client)["judgement_id"]
    page = client.get(f"/ui/judgements/{jid}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    reply = client.post(f"/ui/judgements/{jid}/labels", data={"csrf": csrf.group(1), "mark:a0": "1e999"})
    assert reply.status_code == 422 and "finite" in reply.text
    assert client.get(f"/v1/judgements/{jid}/labels").json()["items"] == []
    assert_label_routes_answer(client, jid)


def test_the_largest_and_smallest_finite_labels_are_stored_and_read_back(client: TestClient) -> None:
    jid = judged(client)["judgement_id"]
    most = 1.7976931348623157e308
    bodies = [
        {"human": {"a0": most, "a1": -most, "a2": 0.0}, "scale": [-most, most], "labeler": "w" * 64},
        {"human": {"a0": 5e-324, "a1": -0.0}, "scale": [-0.0, 5e-324], "labeler": "tiny.one@x: y-z_"},
        {"human": {"a0": 4, "a1": 1, "a2": 2, "a3": 3}, "kind": "rank", "labeler": "ranker"},
    ]
    for body in bodies:
        assert client.put(f"/v1/judgements/{jid}/labels", json=body).status_code == 200
    items = {i["labeler"]: i for i in client.get(f"/v1/judgements/{jid}/labels").json()["items"]}
    for body in bodies:
        stored = items[str(body["labeler"])]
        assert stored["human"] == body["human"] and stored.get("scale") == body.get("scale")
    assert_label_routes_answer(client, jid)


LABELLER, ADMIN = "labeller-key-0123", "admin-key-0123"


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[TestClient]:
    def entry(name: str, key: str, scopes: list[str]) -> dict[str, object]:
        return {"name": name, "sha256": hashlib.sha256(key.encode()).hexdigest(), "scopes": scopes}

    path = tmp_path / "keys.json"
    keys = [
        entry("labeller", LABELLER, ["label", "read"]),
        entry("root", ADMIN, ["admin", "label", "read", "judge"]),
    ]
    path.write_text(json.dumps({"keys": keys}))
    with make_client(tmp_path, FakeBackend(), api_keys_file=path) as client:
        wait_ready(client)
        yield client


def test_a_label_key_writes_only_under_its_own_name_unless_it_is_admin(keyed: TestClient) -> None:
    labeller, root = {"Authorization": f"Bearer {LABELLER}"}, {"Authorization": f"Bearer {ADMIN}"}
    jid = keyed.post("/v1/judge", json=group(4, run_id="labelled"), headers=root).json()["judgement_id"]
    url = f"/v1/judgements/{jid}/labels"
    assert keyed.put(url, json={"human": {"a0": 1}}, headers=root).status_code == 200
    forged = keyed.put(url, json={"human": {"a0": 0}, "labeler": "root"}, headers=labeller)
    assert forged.status_code == 403, forged.text
    error = forged.json()["error"]
    assert error["code"] == "forbidden" and error["details"] == {
        "labeler": "root",
        "key": "labeller",
        "scope": "admin",
    }
    assert "own name" in error["message"] and "admin" in error["message"]
    assert keyed.put(url, json={"human": {"a0": 0.5}}, headers=labeller).status_code == 200
    assert (
        keyed.put(url, json={"human": {"a0": 0.25}, "labeler": "labeller"}, headers=labeller).status_code
        == 200
    )
    assert keyed.put(url, json={"human": {"a0": 0.75}, "labeler": "ann"}, headers=root).status_code == 200
    stored = {i["labeler"]: i["human"] for i in keyed.get(url, headers=root).json()["items"]}
    assert stored == {"root": {"a0": 1.0}, "labeller": {"a0": 0.25}, "ann": {"a0": 0.75}}
    # The labels form holds the key to its own name as well.
    page = keyed.get(f"/ui/judgements/{jid}", headers=labeller)
    assert 'name="labeler" value="labeller"' in page.text and "readonly" in page.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    form = {"csrf": csrf.group(1), "labeler": "root", "mark:a0": "2"}
    refused = keyed.post(f"/ui/judgements/{jid}/labels", data=form, headers=labeller)
    assert refused.status_code == 403 and "own name" in refused.text
    assert keyed.get(url, headers=root).json()["items"][2]["human"] == {"a0": 1.0}
    assert_label_routes_answer(keyed, jid, headers=root)


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
            base_url="http://testserver", transport=httpx.MockTransport(lambda r: _forward(service, r))
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
