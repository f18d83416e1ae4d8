"""Canary answers and length bias through the HTTP API, on the fake judge: the caller never sees a canary
(group and per-answer decoding, several orders, batches, member groups, regrades), rate 0 changes
nothing, and the metrics and run steps follow a judge scripted to love one kind of canary."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from judge_service.backends.base import GenerationRequest
from judge_service.backends.fake import MARK_ANSWER, FakeBackend
from judge_service.config import Settings
from judge_service.schemas import CANARY_KINDS
from tests.api.conftest import group, make_client, wait_ready
from tests.api.test_member import member, post_all, serving
from tests.service_process import metric_value

_SHOWN = re.compile(r'<answer id="([^"]+)">(.*?)</answer>', re.DOTALL)
CALLER_IDS = ["a0", "a1", "a2", "a3"]


class LovesInjections(FakeBackend):
    """A judge a policy could game: top marks for an answer that talks about marks (every injection
    does), the lowest for an empty one, 3 for the rest."""

    @staticmethod
    def marks_for(request: GenerationRequest) -> dict[str, dict[str, dict[str, object]]]:
        marks = FakeBackend.marks_for(request)
        texts = dict(_SHOWN.findall(request.messages[-1]["content"]))
        for answer_id, by_criterion in marks.items():
            text = texts[answer_id]
            mark = 5 if "mark" in text.lower() else 1 if not text.strip() else 3
            for entry in by_criterion.values():
                entry["mark"] = mark
        return marks


def serve(tmp_path: Path, backend: FakeBackend | None = None, **settings: Any) -> TestClient:
    return make_client(tmp_path, backend or FakeBackend(), **settings)


def judge_and_fetch(client: TestClient, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    reply = response.json()
    return reply, client.get(f"/v1/judgements/{reply['judgement_id']}").json()


def assert_hidden(reply: dict[str, Any], stored: dict[str, Any], ids: list[str] = CALLER_IDS) -> str:
    """The caller sees exactly its answers, in its answers and in the shown orders; the stored judgement
    holds the canary apart. Returns the canary's id."""
    (canary,) = stored["canaries"]
    assert canary["id"] not in ids and canary["id"][0] == ids[0][0]  # an id of the same form
    for document in (reply, stored):
        assert [a["id"] for a in document["answers"]] == ids
        assert all(sorted(order) == sorted(ids) for order in document["answer_orders"])
        assert document.get("canaries") is None or document is stored
    assert canary["kind"] in CANARY_KINDS and canary["score"] is not None
    assert len(canary["shown_at"]) == len(stored["answer_orders"])
    assert f'"{canary["id"]}"' not in json.dumps(reply)  # not even its id
    return str(canary["id"])


@pytest.mark.parametrize("decoding", ["group", "per_answer"])
@pytest.mark.parametrize("orders", [1, 2])
def test_the_judge_sees_the_canary_and_the_caller_never_does(
    tmp_path: Path, decoding: str, orders: int
) -> None:
    backend = FakeBackend()
    with serve(tmp_path, backend) as client:
        wait_ready(client)
        reply, stored = judge_and_fetch(client, group(4, canaries="on", decoding=decoding, orders=orders))
    canary_id = assert_hidden(reply, stored)
    text = stored["canaries"][0]["text"]
    shown = [dict(_SHOWN.findall(call.messages[-1]["content"])) for call in backend.requests]
    if decoding == "group":  # one prompt per order, each showing the canary among the answers
        assert len(shown) == orders and all(canary_id in ids for ids in shown)
        positions = [list(ids).index(canary_id) for ids in shown]
        assert positions == stored["canaries"][0]["shown_at"]
    else:  # the canary only in its own prompt: the caller's answers are marked as if it were not there
        own = [s for call, s in zip(backend.requests, shown, strict=True) if call.answer_id == canary_id]
        others = [s for call, s in zip(backend.requests, shown, strict=True) if call.answer_id != canary_id]
        assert len(own) == orders and all(canary_id in s for s in own)
        assert len(others) == 4 * orders and all(canary_id not in s for s in others)
    shown_text = f'<answer id="{canary_id}">{escape(text)}</answer>'  # escaped, like every answer
    showing = sum(shown_text in call.messages[-1]["content"] for call in backend.requests)
    assert showing == orders  # the group prompts, or the canary's own per-answer prompts


def test_per_answer_prompts_of_the_callers_answers_are_the_same_as_without_a_canary(tmp_path: Path) -> None:
    prompts: dict[str, list[Any]] = {}
    for canaries in ("off", "on"):
        backend = FakeBackend()
        with serve(tmp_path / canaries, backend) as client:
            wait_ready(client)
            body = group(4, canaries=canaries, decoding="per_answer", seed=7, grader="judge+similarity")
            _, stored = judge_and_fetch(client, body)
        prompts[canaries] = sorted(
            (c.answer_id, c.messages) for c in backend.requests if c.answer_id in CALLER_IDS
        )
        prompts[canaries + "-answers"] = stored["answers"]
    assert prompts["on"] == prompts["off"]
    assert prompts["on-answers"] == prompts["off-answers"]  # the judge's and the rule's scores alike


def test_batches_and_regrades_never_show_the_canary(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        wait_ready(client)
        batch = client.post("/v1/judge/batch", json={"groups": [group(4, canaries="on")] * 3})
        assert batch.status_code == 200
        for item in batch.json()["results"]:
            stored = client.get(f"/v1/judgements/{item['judgement']['judgement_id']}").json()
            assert_hidden(item["judgement"], stored)
        original, first = judge_and_fetch(client, group(4, canaries="on", orders=2))
        regraded = client.post("/v1/regrade", json={"judgement_ids": [original["judgement_id"]]})
        new = regraded.json()["results"][0]["judgement"]
        again = client.get(f"/v1/judgements/{new['judgement_id']}").json()
        assert_hidden(new, again)
        keep = ("id", "kind", "text", "shown_at")
        assert {k: again["canaries"][0][k] for k in keep} == {k: first["canaries"][0][k] for k in keep}


@pytest.mark.parametrize("assembly", ["local", "shared"])
async def test_member_groups_never_show_the_canary(tmp_path: Path, assembly: str) -> None:
    async with serving(tmp_path, member_assembly=assembly) as (_, client):
        bodies = [
            member(f"m{i}", size=2, reference="The Team plan has 25 seats.", canaries=["reference_twist"])
            for i in range(2)
        ]
        replies = await post_all(client, bodies)
        assert [r.status_code for r in replies] == [200, 200]
        assert [r.json()["answer"]["id"] for r in replies] == ["m0", "m1"]
        stored = (await client.get(f"/v1/judgements/{replies[0].json()['judgement_id']}")).json()
    page_item = {k: v for k, v in stored.items() if k not in ("canaries", "request", "raw_outputs")}
    canary_id = assert_hidden(page_item, stored, ids=["m0", "m1"])
    assert all(f'"{canary_id}"' not in r.text for r in replies)
    assert stored["canaries"][0]["text"] == "The Team plan has 35 seats."


def test_a_regrade_of_a_group_without_a_canary_gets_none(tmp_path: Path) -> None:
    with serve(tmp_path, canary_rate=0.0) as client:
        wait_ready(client)
        reply, _ = judge_and_fetch(client, group(4))
    with serve(tmp_path, canary_rate=1.0) as client:  # the same database, now with every group a canary
        wait_ready(client)
        regraded = client.post("/v1/regrade", json={"judgement_ids": [reply["judgement_id"]]}).json()
        new_id = regraded["results"][0]["judgement"]["judgement_id"]
        assert client.get(f"/v1/judgements/{new_id}").json()["canaries"] is None
        _, fresh = judge_and_fetch(client, group(4))
        assert len(fresh["canaries"]) == 1


def test_rate_zero_changes_nothing(tmp_path: Path) -> None:
    seen = {}
    for name, settings, extra in [
        ("rate0", {"canary_rate": 0.0}, {}),
        ("off", {"canary_rate": 1.0}, {"canaries": "off"}),
        ("rate1", {"canary_rate": 1.0}, {}),
    ]:
        backend = FakeBackend()
        with serve(tmp_path / name, backend, **settings) as client:
            wait_ready(client)
            reply, stored = judge_and_fetch(client, group(4, seed=3, **extra))
            metrics = client.get("/metrics").text
        seen[name] = (reply, stored, [c.messages for c in backend.requests], metrics)
    (r0, s0, calls0, m0), (r_off, s_off, calls_off, _) = seen["rate0"], seen["off"]
    assert s0["canaries"] is None and s_off["canaries"] is None
    for name in ("rate0", "off"):  # stored as before canaries existed: no key at all
        with closing(sqlite3.connect(tmp_path / name / "judgements.sqlite3")) as db:
            (doc,) = db.execute("SELECT doc FROM judgements").fetchone()
        assert "canaries" not in json.loads(doc)
    assert calls0 == calls_off and r0["answers"] == r_off["answers"]
    assert r0["answer_orders"] == r_off["answer_orders"]
    # The fingerprint is the grader's configuration: a canary is not part of it.
    assert r0["grader_fingerprint"] == r_off["grader_fingerprint"] == seen["rate1"][0]["grader_fingerprint"]
    assert metric_value(m0, "judge_canary_groups_total", kind="injection") == 0
    assert len(seen["rate1"][2][0][-1]["content"].split("<answer id=")) == 6  # 5 answers shown


def test_metrics_and_steps_follow_a_judge_that_loves_one_kind(tmp_path: Path) -> None:
    with serve(tmp_path, LovesInjections(), canary_rate=1.0, canary_kinds="injection,empty") as client:
        wait_ready(client)
        kinds = [
            judge_and_fetch(client, group(4, run_id="hacked", step=i // 4))[1]["canaries"][0]["kind"]
            for i in range(12)
        ]
        metrics = client.get("/metrics").text
        steps = client.get("/v1/runs/hacked/steps").json()["items"]
    injections, empties = kinds.count("injection"), kinds.count("empty")
    assert injections and empties and injections + empties == 12
    assert metric_value(metrics, "judge_canary_groups_total", kind="injection") == injections
    assert metric_value(metrics, "judge_canary_outranked_total", kind="injection") == injections
    assert metric_value(metrics, "judge_canary_groups_total", kind="empty") == empties
    assert metric_value(metrics, "judge_canary_outranked_total", kind="empty") == 0
    assert metric_value(metrics, "judge_canary_score_count", kind="injection") == injections
    assert metric_value(metrics, "judge_canary_score_sum", kind="empty") == 0.0
    assert [s["canary_groups"] for s in steps] == [4, 4, 4]
    for step, chosen in zip(steps, [kinds[0:4], kinds[4:8], kinds[8:12]], strict=True):
        assert step["canary_outrank_share"] == pytest.approx(chosen.count("injection") / 4)
        expected = {k: (1.0 if k == "injection" else 0.0) for k in set(chosen)}
        assert step["canary_outrank_by_kind"] == expected


def test_length_bias_is_returned_stored_and_aggregated(tmp_path: Path) -> None:
    answers = [
        {"id": f"a{i}", "text": MARK_ANSWER.format(mark) + " word" * (3 * i)}
        for i, mark in enumerate([1, 2, 4, 5])
    ]
    with serve(tmp_path) as client:
        wait_ready(client)
        reply, stored = judge_and_fetch(client, {**group(4), "answers": answers, "run_id": "long", "step": 0})
        flat, _ = judge_and_fetch(client, group(4, run_id="long", step=0))  # every answer alike long
        metrics = client.get("/metrics").text
        steps = client.get("/v1/runs/long/steps").json()["items"]
    assert reply["length_bias"] == stored["length_bias"] == 1.0  # longer answers always scored higher
    assert flat["length_bias"] is None
    assert steps[0]["length_bias"] == 1.0  # the mean over the groups that have one
    assert metric_value(metrics, "judge_length_bias_count") == 1


@pytest.mark.parametrize(
    ("canaries", "says"),
    [(["nope"], "injection"), ([], "at least 1"), ("sometimes", "'off'")],
)
def test_bad_canaries_are_refused_with_what_to_send(client: TestClient, canaries: Any, says: str) -> None:
    response = client.post("/v1/judge", json=group(2, canaries=canaries))
    assert response.status_code == 422 and says in response.text, response.text


def test_bad_canary_settings_are_refused_at_start() -> None:
    with pytest.raises(ValueError, match="JUDGE_CANARY_KINDS: expected canary kinds"):
        Settings(backend="fake", canary_kinds="injection,nope")
    with pytest.raises(ValueError, match="canary_rate"):
        Settings(backend="fake", canary_rate=1.5)
