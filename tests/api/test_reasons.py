"""Marks now, reasons on demand: `reasons` ("inline", "none", "sample") on judge, batch, member and regrade
requests, and POST /v1/judgements/{id}/reasons, which has the judge explain the marks it gave (stored
apart, replayed, never changing a score)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import LEAVE_ONE_UNSCORED, FakeBackend
from judge_service.client import JudgeClient, JudgeClientError
from judge_service.config import PACKAGED_PROMPTS
from judge_service.errors import JudgeBackendError
from tests.api.conftest import group, make_client, wait_ready
from tests.api.test_labels_api import _forward
from tests.api.test_member import serving
from tests.service_process import metric_value


def judged(client: TestClient, **extra: Any) -> dict[str, Any]:
    reply = client.post("/v1/judge", json=group(4, **extra))
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def reasons_of(body: dict[str, Any]) -> set[str | None]:
    return {c["reason"] for a in body["answers"] for c in a["criteria"].values()}


@pytest.mark.parametrize("decoding", ["group", "per_answer"])
def test_marks_only_answers_carry_marks_and_scores_but_no_reasons(
    client: TestClient, fake_backend: FakeBackend, decoding: str
) -> None:
    inline = judged(client, decoding=decoding, seed=7)
    none = judged(client, decoding=decoding, seed=7, reasons="none")
    assert inline["reasons"] == "inline" and none["reasons"] == "none"
    assert None not in reasons_of(inline) and reasons_of(none) == {None}
    # The fake judge marks by answer id: the same marks, fewer tokens, another prompt and fingerprint.
    assert [a["score"] for a in none["answers"]] == [a["score"] for a in inline["answers"]]
    assert none["usage"]["completion_tokens"] * 3 < inline["usage"]["completion_tokens"]
    assert none["prompt_version"] != inline["prompt_version"]
    assert none["grader_fingerprint"] != inline["grader_fingerprint"]
    schema = fake_backend.requests[-1].json_schema or {}
    assert "reason" not in json.dumps(schema)


def test_inline_is_the_default_and_keeps_the_fingerprint(client: TestClient) -> None:
    plain, inline = judged(client), judged(client, reasons="inline")
    assert plain["grader_fingerprint"] == inline["grader_fingerprint"]
    sample = judged(client, reasons="sample")
    assert len({plain["grader_fingerprint"], judged(client, reasons="none")["grader_fingerprint"]}) == 2
    assert sample["grader_fingerprint"] not in (plain["grader_fingerprint"],)


def test_sample_writes_reasons_for_the_share_the_rate_names(tmp_path: Path) -> None:
    for rate, expected in ((0.0, {"none"}), (1.0, {"inline"})):
        with make_client(tmp_path / str(rate), FakeBackend(), reasons="sample", reason_sample_rate=rate) as c:
            wait_ready(c)
            batch = c.post("/v1/judge/batch", json={"groups": [group(2) for _ in range(6)]}).json()
            assert {r["judgement"]["reasons"] for r in batch["results"]} == expected
    with make_client(tmp_path / "half", FakeBackend(), reasons="sample", reason_sample_rate=0.5) as c:
        wait_ready(c)
        batch = c.post("/v1/judge/batch", json={"groups": [group(2) for _ in range(40)]}).json()
        drawn = [r["judgement"]["reasons"] for r in batch["results"]]
        assert 5 < drawn.count("inline") < 35 and drawn.count("inline") + drawn.count("none") == 40
        assert c.post("/v1/judge", json=group(2, reasons="inline")).json()["reasons"] == "inline"


@pytest.mark.parametrize("decoding", ["group", "per_answer"])
def test_reasons_written_on_demand_explain_the_marks_and_change_no_score(
    client: TestClient, fake_backend: FakeBackend, decoding: str
) -> None:
    body = judged(client, decoding=decoding, reasons="none", canaries="on")
    judged_calls = list(fake_backend.requests)
    judgement_id = body["judgement_id"]
    reply = client.post(f"/v1/judgements/{judgement_id}/reasons")
    assert reply.status_code == 200, reply.text
    explained = reply.json()
    ids = [a["id"] for a in body["answers"]]
    assert list(explained["answers"]) == ids and explained["failures"] == {}
    for answer in body["answers"]:
        for name, mark in answer["criteria"].items():
            # The fake judge explains the mark it is shown as its own: the stored mark, never another.
            assert f"explains mark {mark['mark']} for" in explained["answers"][answer["id"]][name]
    asked = fake_backend.requests[len(judged_calls) :]
    assert len(asked) == (4 if decoding == "per_answer" else 1)
    # Each call continues the judged prompt as it was (prefix cache), with the marks as the judge's reply.
    judged_prompts = [r.messages for r in judged_calls]
    for request in asked:
        assert request.messages[:-2] in judged_prompts
        assert request.messages[-2]["role"] == "assistant" and request.messages[-1]["role"] == "user"
        assert '"mark"' not in json.dumps(request.json_schema)
    stored = client.get(f"/v1/judgements/{judgement_id}").json()
    assert stored["explained"] == explained
    assert stored["answers"] == body["answers"]  # no score, mark or reason of the judgement changed
    assert stored["canaries"] and stored["canaries"][0]["id"] not in explained["answers"]
    # Asked again: the stored reasons, no judge call.
    calls = len(fake_backend.requests)
    assert client.post(f"/v1/judgements/{judgement_id}/reasons").json() == explained
    assert len(fake_backend.requests) == calls
    metrics = client.get("/metrics").text
    assert metric_value(metrics, "judge_reasons_explained_total") == 1
    assert metric_value(metrics, "judge_reasons_groups_total", reasons="none") == 1


def test_reasons_on_demand_refuse_what_they_cannot_explain(client: TestClient) -> None:
    unknown = client.post("/v1/judgements/" + "0" * 32 + "/reasons")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    inline = judged(client)
    refused = client.post(f"/v1/judgements/{inline['judgement_id']}/reasons")
    assert refused.status_code == 409 and "written with its marks" in refused.json()["error"]["message"]
    rules = judged(client, grader="similarity")
    refused = client.post(f"/v1/judgements/{rules['judgement_id']}/reasons")
    assert refused.status_code == 409 and "without the LLM judge" in refused.json()["error"]["message"]
    assert client.get(f"/v1/judgements/{inline['judgement_id']}").json()["explained"] is None


def test_another_judge_model_does_not_explain_marks_it_did_not_give(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(model_name="judge-a")) as first:
        wait_ready(first)
        judgement_id = judged(first, reasons="none")["judgement_id"]
    with make_client(tmp_path, FakeBackend(model_name="judge-b")) as second:
        wait_ready(second)
        refused = second.post(f"/v1/judgements/{judgement_id}/reasons")
        assert refused.status_code == 409
        assert "'judge-a'" in refused.json()["error"]["message"]


class FailsFirstExplain(FakeBackend):
    """A judge that fails the first explain call it gets, then works."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def generate(self, request: Any) -> Any:
        if request.messages[-2]["role"] == "assistant" and not self.failed:
            self.failed = True
            raise JudgeBackendError("the judge engine is gone")
        return await super().generate(request)


def test_a_judge_failure_stores_nothing_and_a_retry_writes_the_reasons(tmp_path: Path) -> None:
    with make_client(tmp_path, FailsFirstExplain()) as client:
        wait_ready(client)
        judgement_id = judged(client, reasons="none", decoding="group")["judgement_id"]
        failed = client.post(f"/v1/judgements/{judgement_id}/reasons")
        assert failed.status_code == 502 and failed.json()["error"]["code"] == "judge_unavailable"
        assert client.get(f"/v1/judgements/{judgement_id}").json()["explained"] is None
        assert client.post(f"/v1/judgements/{judgement_id}/reasons").status_code == 200


class SlowExplain(FakeBackend):
    async def generate(self, request: Any) -> Any:
        if request.messages[-2]["role"] == "assistant":
            await asyncio.sleep(0.3)
        return await super().generate(request)


async def test_concurrent_asks_share_one_judge_call(tmp_path: Path) -> None:
    backend = SlowExplain()
    async with serving(tmp_path, backend) as (_, client):
        body = (await client.post("/v1/judge", json=group(3, reasons="none", decoding="group"))).json()
        url = f"/v1/judgements/{body['judgement_id']}/reasons"
        before = len(backend.requests)
        replies = await asyncio.gather(*(client.post(url) for _ in range(5)))
    assert {r.status_code for r in replies} == {200}
    assert len({r.text for r in replies}) == 1
    assert len(backend.requests) == before + 1


def test_reasons_on_demand_need_a_key_when_keys_are_on(tmp_path: Path) -> None:
    key = "reasons-key-0123456789"
    with make_client(tmp_path, FakeBackend(), api_keys=key) as client:
        wait_ready(client)
        headers = {"Authorization": f"Bearer {key}"}
        body = client.post("/v1/judge", json=group(2, reasons="none"), headers=headers).json()
        url = f"/v1/judgements/{body['judgement_id']}/reasons"
        assert client.post(url).status_code == 401
        assert client.post(url, headers={"Authorization": "Bearer wrong-key-0123456789"}).status_code == 401
        assert client.post(url, headers=headers).status_code == 200


def test_the_setting_regrade_and_member_requests_take_reasons(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(), reasons="none") as client:
        wait_ready(client)
        body = judged(client)
        assert body["reasons"] == "none"
        regraded = client.post(
            "/v1/regrade", json={"judgement_ids": [body["judgement_id"]], "reasons": "inline"}
        )
        new = regraded.json()["results"][0]["judgement"]
        assert new["reasons"] == "inline" and None not in reasons_of(new)
        member = {
            "group_key": "g-1",
            "group_size": 1,
            "answer": {"id": "m0", "text": "Click Share."},
            "conversation": [{"role": "user", "content": "How do I share it?"}],
            "reference": "Click Share.",
            "reasons": "inline",
        }
        answer = client.post("/v1/judge/member", json=member).json()["answer"]
        assert all(c["reason"] for c in answer["criteria"].values())


def test_a_prompt_template_without_marks_only_files_refuses_none(tmp_path: Path) -> None:
    folder = tmp_path / "prompts" / "mine"
    folder.mkdir(parents=True)
    for part in ("system.j2", "user.j2"):
        (folder / part).write_text((PACKAGED_PROMPTS / "judge_group" / part).read_text())
    with make_client(
        tmp_path, FakeBackend(), prompts_dir=tmp_path / "prompts", prompt_template="mine", decoding="group"
    ) as client:
        wait_ready(client)
        refused = client.post("/v1/judge", json=group(2, reasons="none"))
        assert refused.status_code == 422 and "reasons 'none' is not available" in refused.text
        assert client.post("/v1/judge", json=group(2)).status_code == 200


def test_the_client_asks_for_reasons_and_reads_them_back(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend()) as service:
        wait_ready(service)
        client = JudgeClient(
            base_url="http://testserver", transport=httpx.MockTransport(lambda r: _forward(service, r))
        )
        body = client.judge(group(2, reasons="none"))
        explained = client.explain(body.judgement_id)
        assert set(explained.answers) == {"a0", "a1"} and explained.usage.judge_calls == 1
        assert client.judgement(body.judgement_id).explained == explained
        with pytest.raises(JudgeClientError) as refused:
            client.explain(client.judge(group(2)).judgement_id)
        assert refused.value.status == 409


def test_an_unscored_answer_has_no_marks_to_explain(client: TestClient) -> None:
    body = group(3, reasons="none", decoding="per_answer")
    body["conversation"][0]["content"] += " " + LEAVE_ONE_UNSCORED
    judged_body = client.post("/v1/judge", json=body).json()
    (unscored,) = [a["id"] for a in judged_body["answers"] if a["status"] == "unscored"]
    explained = client.post(f"/v1/judgements/{judged_body['judgement_id']}/reasons").json()
    assert "no marks" in explained["failures"][unscored]
    assert sorted(explained["answers"]) == sorted(
        a["id"] for a in judged_body["answers"] if a["id"] != unscored
    )
