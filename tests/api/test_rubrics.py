"""Rubrics per prompt: POST/GET/PUT /v1/rubrics, `rubric` in judge, batch, member and regrade requests,
checklist items in the response, fingerprints, and one judge call per rubric (concurrent requests, and two
replicas on PostgreSQL)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from judge_service.backends.base import GenerationRequest
from judge_service.backends.fake import MARK_ANSWER, FakeBackend
from judge_service.client import JudgeClient, JudgeClientError
from judge_service.schemas import RubricRequest
from tests.api.conftest import make_client, wait_ready
from tests.api.test_labels_api import _forward
from tests.api.test_member import member, serving

CONVERSATION = [{"role": "user", "content": "Tom has 5 apples and buys 13 more. How many has he?"}]
REFERENCE = "5 + 13 = 18. He has 18 apples."


def rubric_body(**extra: Any) -> dict[str, Any]:
    return {"conversation": CONVERSATION, "reference": REFERENCE, **extra}


def apples(n: int = 4, **extra: Any) -> dict[str, Any]:
    """A group whose answers ask the fake judge for marks 5, 4, 2, 1 (items met by the good ones)."""
    marks = [5, 4, 2, 1, 3, 3][:n]
    answers = [{"id": f"a{i}", "text": f"{MARK_ANSWER.format(m)} answer {i}"} for i, m in enumerate(marks)]
    return {"conversation": CONVERSATION, "reference": REFERENCE, "answers": answers, **extra}


def rubric_calls(backend: FakeBackend) -> list[GenerationRequest]:
    return [r for r in backend.requests if "item_1" in (r.json_schema or {}).get("properties", {})]


def ok(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_a_rubric_is_written_once_stored_and_read_back(client: TestClient, fake_backend: FakeBackend) -> None:
    written = ok(client.post("/v1/rubrics", json=rubric_body(items=5)))
    assert written["id"].startswith("rb_") and (written["version"], written["source"]) == (1, "generated")
    assert [c["name"] for c in written["criteria"]] == [f"item_{i}" for i in range(1, 6)]
    assert {c["scale"] for c in written["criteria"]} == {"binary"}
    assert written["criteria"][0] == {
        "name": "item_1",
        "description": "Gives the final result 18",
        "mark_1": None,
        "mark_5": None,
        "weight": None,
        "scale": "binary",
        "kind": "essential",
    }
    assert written["criteria"][-1]["kind"] == "pitfall"
    assert written["usage"]["judge_calls"] == 1 and written["request"]["items"] == 5
    assert written["judge_model"] == "fake-judge" and written["prompt_version"].startswith("judge_group@")
    assert ok(client.post("/v1/rubrics", json=rubric_body(items=5))) == written  # stored: no judge call
    assert len(rubric_calls(fake_backend)) == 1
    assert ok(client.get(f"/v1/rubrics/{written['id']}")) == written
    # Other content, item count or instructions: another rubric.
    other = ok(client.post("/v1/rubrics", json=rubric_body(items=6)))
    told = ok(client.post("/v1/rubrics", json=rubric_body(items=5, instructions="Check the units.")))
    assert len({written["id"], other["id"], told["id"]}) == 3
    assert "Check the units." in rubric_calls(fake_backend)[-1].messages[-1]["content"]
    default = ok(client.post("/v1/rubrics", json=rubric_body()))
    assert len(default["criteria"]) == 12  # JUDGE_RUBRIC_ITEMS


def test_edits_add_versions_and_old_versions_stay(client: TestClient) -> None:
    written = ok(client.post("/v1/rubrics", json=rubric_body(items=3)))
    units = {"name": "units", "description": "Says the unit (apples)", "scale": "binary", "kind": "optional"}
    items = [*written["criteria"][:2], units]
    edited = ok(client.put(f"/v1/rubrics/{written['id']}", json={"criteria": items, "note": "units"}))
    assert (edited["id"], edited["version"], edited["source"], edited["note"]) == (
        written["id"],
        2,
        "edited",
        "units",
    )
    assert edited["sha256"] != written["sha256"] and edited["judge_model"] is None
    assert ok(client.get(f"/v1/rubrics/{written['id']}"))["version"] == 2
    assert ok(client.get(f"/v1/rubrics/{written['id']}", params={"version": 1})) == written
    # A POST for the same content still answers version 1 (what the judge wrote); `rubric` names the latest.
    assert ok(client.post("/v1/rubrics", json=rubric_body(items=3)))["version"] == 1


def test_unknown_or_malformed_rubrics_are_refused_saying_what_to_fix(client: TestClient) -> None:
    unknown = "rb_" + "0" * 24
    assert client.get(f"/v1/rubrics/{unknown}").status_code == 404
    assert client.get("/v1/rubrics/nope").status_code == 422
    put = client.put(
        f"/v1/rubrics/{unknown}", json={"criteria": [{"name": "x", "description": "d", "scale": "binary"}]}
    )
    assert put.status_code == 404
    judged = client.post("/v1/judge", json=apples(rubric=unknown))
    assert judged.status_code == 422
    assert "POST /v1/rubrics" in judged.json()["error"]["message"]
    both = client.post(
        "/v1/judge",
        json=apples(rubric="generate", criteria=[{"name": "x", "description": "d", "scale": "binary"}]),
    )
    assert both.status_code == 422 and "not both" in both.json()["error"]["message"]
    pitfalls = {"criteria": [{"name": "x", "description": "d", "scale": "binary", "kind": "pitfall"}]}
    written = ok(client.post("/v1/rubrics", json=rubric_body(items=3)))
    assert client.put(f"/v1/rubrics/{written['id']}", json=pitfalls).status_code == 422
    assert client.post("/v1/rubrics", json=rubric_body(items=2)).status_code == 422


def test_a_rubric_too_long_for_the_context_is_a_422(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(max_context_tokens=600)) as client:
        wait_ready(client)
        reply = client.post("/v1/rubrics", json=rubric_body(items=20))
        assert reply.status_code == 422
        assert reply.json()["error"]["code"] == "prompt_too_long"
        assert "fewer items" in reply.json()["error"]["message"]
        long = [{"name": f"i{k}", "description": "x " * 240, "scale": "binary"} for k in range(20)]
        judged = client.post("/v1/judge", json=apples(criteria=long))
        assert judged.status_code == 422 and judged.json()["error"]["code"] == "prompt_too_long"
        assert "a rubric of fewer items" in judged.json()["error"]["message"]


@pytest.mark.parametrize("decoding", ["group", "per_answer"])
def test_judging_on_a_rubric_says_which_items_each_answer_met(
    client: TestClient, fake_backend: FakeBackend, decoding: str
) -> None:
    written = ok(client.post("/v1/rubrics", json=rubric_body(items=4)))
    body = ok(client.post("/v1/judge", json=apples(rubric=written["id"], decoding=decoding)))
    assert body["rubric"] == {"id": written["id"], "version": 1, "sha256": written["sha256"]}
    best, worst = body["answers"][0], body["answers"][3]
    assert {c["met"] for c in best["criteria"].values()} == {True, False}  # items met, the pitfall not
    assert best["criteria"]["item_4"] == {
        **best["criteria"]["item_4"],
        "met": False,
        "kind": "pitfall",
        "mark": None,
    }
    assert best["score"] == 1.0 and worst["score"] == 0.0  # worst: no item met, the pitfall hit
    assert worst["criteria"]["item_4"]["met"] is True
    assert "met 3 of 3 items" in best["explanation"] and "pitfalls hit: item_4 of 1" in worst["explanation"]
    system = fake_backend.requests[-1].messages[0]["content"]
    assert "item_4 (yes or no, pitfall): States a final result other than 18" in system
    stored = ok(client.get(f"/v1/judgements/{body['judgement_id']}"))
    assert stored["rubric"] == body["rubric"] and stored["request"]["rubric"] == written["id"]


def test_rubric_generate_writes_once_per_prompt_and_the_fingerprint_covers_how(
    tmp_path: Path,
) -> None:
    backend = FakeBackend()
    with make_client(tmp_path, backend) as client:
        wait_ready(client)
        first = ok(client.post("/v1/judge", json=apples(rubric="generate")))
        again = ok(client.post("/v1/judge", json=apples(rubric="generate")))
        other_prompt = apples(rubric="generate", reference="18 apples.")
        other = ok(client.post("/v1/judge", json=other_prompt))
        assert len(rubric_calls(backend)) == 2  # one per prompt
        assert first["rubric"] == again["rubric"] != other["rubric"]
        assert len(ok(client.get(f"/v1/rubrics/{first['rubric']['id']}"))["criteria"]) == 12
        # Generated per prompt: one fingerprint for the run, not one per prompt's items.
        assert first["grader_fingerprint"] == other["grader_fingerprint"]
        explicit = ok(client.post("/v1/judge", json=apples(rubric=first["rubric"]["id"])))
        assert explicit["grader_fingerprint"] != first["grader_fingerprint"]
        # An edit changes an explicit rubric's fingerprint; the next "generate" uses the edited version.
        items = ok(client.get(f"/v1/rubrics/{first['rubric']['id']}"))["criteria"][:3]
        ok(client.put(f"/v1/rubrics/{first['rubric']['id']}", json={"criteria": items}))
        edited = ok(client.post("/v1/judge", json=apples(rubric=first["rubric"]["id"])))
        assert (
            edited["rubric"]["version"] == 2
            and edited["grader_fingerprint"] != explicit["grader_fingerprint"]
        )
        pinned = ok(client.post("/v1/judge", json=apples(rubric=first["rubric"]["id"] + "@1")))
        assert pinned["grader_fingerprint"] == explicit["grader_fingerprint"]
        regenerated = ok(client.post("/v1/judge", json=apples(rubric="generate")))
        assert regenerated["rubric"]["version"] == 2 and len(rubric_calls(backend)) == 2
    with make_client(tmp_path / "b", FakeBackend(), rubric_items=5) as client:
        wait_ready(client)
        fewer = ok(client.post("/v1/judge", json=apples(rubric="generate")))
        assert fewer["grader_fingerprint"] != first["grader_fingerprint"]


def test_a_regrade_judges_on_the_same_rubric_version_even_after_an_edit(client: TestClient) -> None:
    written = ok(client.post("/v1/rubrics", json=rubric_body(items=4)))
    old = ok(client.post("/v1/judge", json=apples(rubric=written["id"], run_id="r")))
    ok(client.put(f"/v1/rubrics/{written['id']}", json={"criteria": written["criteria"][:2]}))
    regraded = ok(client.post("/v1/regrade", json={"judgement_ids": [old["judgement_id"]], "orders": 2}))
    new = regraded["results"][0]["judgement"]
    assert new["rubric"] == old["rubric"] and set(new["answers"][0]["criteria"]) == set(
        old["answers"][0]["criteria"]
    )
    on_latest = ok(
        client.post("/v1/regrade", json={"judgement_ids": [old["judgement_id"]], "rubric": written["id"]})
    )
    assert on_latest["results"][0]["judgement"]["rubric"]["version"] == 2
    plain = {"name": "style", "description": "Reads well", "mark_1": "no", "mark_5": "yes"}
    on_criteria = ok(
        client.post("/v1/regrade", json={"judgement_ids": [old["judgement_id"]], "criteria": [plain]})
    )
    assert on_criteria["results"][0]["judgement"]["rubric"] is None


def test_mixed_scales_expected_met_and_marks_only_in_one_request(client: TestClient) -> None:
    criteria = [
        {"name": "style", "description": "Reads well", "mark_1": "no", "mark_5": "yes", "weight": 1.0},
        {"name": "total", "description": "Gives 18", "scale": "binary", "kind": "essential"},
        {"name": "wrong", "description": "Gives 17", "scale": "binary", "kind": "pitfall"},
    ]
    body = ok(client.post("/v1/judge", json=apples(criteria=criteria, score_from="expected")))
    best = body["answers"][0]["criteria"]
    assert best["style"]["mark"] == 5 and best["style"]["met"] is None
    assert best["total"]["met"] is True and best["total"]["met_probability"] == pytest.approx(0.8)
    assert best["total"]["score"] == pytest.approx(0.8) and best["wrong"]["score"] == pytest.approx(0.2)
    none = ok(client.post("/v1/judge", json=apples(criteria=criteria, reasons="none")))
    assert none["answers"][0]["criteria"]["total"] == {
        **none["answers"][0]["criteria"]["total"],
        "met": True,
        "reason": None,
    }
    explained = ok(client.post(f"/v1/judgements/{none['judgement_id']}/reasons"))
    assert explained["answers"]["a0"]["total"].startswith("explains mark True")


async def test_concurrent_requests_for_one_rubric_make_one_judge_call(tmp_path: Path) -> None:
    backend = FakeBackend(latency_s=0.05)
    async with serving(tmp_path, backend) as (_, client):
        replies = await asyncio.gather(
            *(client.post("/v1/rubrics", json=rubric_body(items=4)) for _ in range(3)),
            *(client.post("/v1/judge", json=apples(rubric="generate", seed=i)) for i in range(3)),
        )
        assert [r.status_code for r in replies] == [200] * 6
        assert len({r.json()["id"] for r in replies[:3]}) == 1
        batch = await client.post("/v1/judge/batch", json={"groups": [apples(rubric="generate")] * 2})
        members = await asyncio.gather(
            *(
                client.post("/v1/judge/member", json=member(f"m{i}", size=2, rubric="generate"))
                for i in range(2)
            )
        )
    # Three rubrics: the apples prompt with 4 items, with the default 12 ("generate"), the members' prompt.
    assert len(rubric_calls(backend)) == 3
    assert all(item["judgement"]["rubric"] is not None for item in batch.json()["results"])
    assert members[0].json()["answer"]["criteria"]["item_1"]["met"] in (True, False)


async def test_two_replicas_on_postgresql_write_a_rubric_once(tmp_path: Path, postgres_url: str) -> None:
    first, second = FakeBackend(latency_s=0.2), FakeBackend(latency_s=0.2)
    async with (
        serving(tmp_path / "1", first, database_url=postgres_url, migrate_on_start=True) as (_, one),
        serving(tmp_path / "2", second, database_url=postgres_url, migrate_on_start=True) as (_, two),
    ):
        replies = await asyncio.gather(
            one.post("/v1/rubrics", json=rubric_body(items=4)),
            two.post("/v1/rubrics", json=rubric_body(items=4)),
            two.post("/v1/judge", json=apples(rubric="generate")),
        )
        assert [r.status_code for r in replies] == [200] * 3, [r.text for r in replies]
        assert replies[0].json() == replies[1].json()
    assert len(rubric_calls(first)) + len(rubric_calls(second)) == 2  # items=4, and the default 12


def test_a_rubric_the_judge_cannot_write_is_an_error_never_a_rubric(tmp_path: Path) -> None:
    backend = FakeBackend(script=["not json", '{"item_1": 3}', "{}"])
    with make_client(tmp_path, backend, parse_retries=2) as client:
        wait_ready(client)
        reply = client.post("/v1/rubrics", json=rubric_body(items=3))
        assert reply.status_code == 502
        assert reply.json()["error"]["code"] == "rubric_unwritten"
        assert "3 attempts" in reply.json()["error"]["message"]
        assert client.get("/metrics").text.count('judge_rubrics_total{source="written"} 0.0') == 1


def test_the_client_writes_reads_and_edits_rubrics(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend()) as service:
        wait_ready(service)
        client = JudgeClient(
            base_url="http://testserver", transport=httpx.MockTransport(lambda r: _forward(service, r))
        )
        written = client.write_rubric(RubricRequest.model_validate(rubric_body(items=3)))
        assert client.write_rubric(rubric_body(items=3)) == written
        edited = client.edit_rubric(written.id, {"criteria": [c.model_dump() for c in written.criteria[:2]]})
        assert (edited.version, len(edited.criteria)) == (2, 2)
        assert client.rubric(written.id) == edited and client.rubric(written.id, 1) == written
        with pytest.raises(JudgeClientError) as missing:
            client.rubric("rb_" + "1" * 24)
        assert missing.value.status == 404
