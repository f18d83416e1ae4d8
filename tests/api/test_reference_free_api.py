"""Groups without a reference over HTTP, on the fake judge: the judge's own prompts, the fingerprint, the
graders that need a reference refusing with what to do, and the rest of the service as for any group."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from judge_service.config import PACKAGED_PROMPTS
from tests.api.conftest import group, make_client, wait_ready


def free(n: int = 4, **extra: Any) -> dict[str, Any]:
    """The conftest group without its reference."""
    body = group(n)
    del body["reference"]
    return {**body, **extra}


def prompt_text(backend: FakeBackend) -> str:
    return json.dumps([r.messages for r in backend.requests]).lower()


def test_a_group_without_a_reference_is_judged_with_prompts_that_name_none(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    reply = client.post("/v1/judge", json=free())
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["prompt_version"].startswith("judge_group/no_reference@")
    assert all(a["score"] is not None for a in body["answers"])
    assert "reference" not in prompt_text(fake_backend)
    stored = client.get(f"/v1/judgements/{body['judgement_id']}").json()
    assert stored["request"]["reference"] is None
    page = client.get(f"/ui/judgements/{body['judgement_id']}")
    assert page.status_code == 200 and "no-reference" in page.text


def test_null_and_absent_are_the_same_request_and_differ_from_an_empty_reference(client: TestClient) -> None:
    headers = {"Idempotency-Key": "free-1"}
    first = client.post("/v1/judge", json=free(), headers=headers)
    again = client.post("/v1/judge", json=free(reference=None), headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.json()["judgement_id"] == first.json()["judgement_id"]
    other = client.post("/v1/judge", json=free(reference=""), headers=headers)
    assert other.status_code == 409, other.text  # "" is a reference (an empty one), not none


def test_the_fingerprint_tells_a_group_without_a_reference_from_one_with(client: TestClient) -> None:
    with_one = client.post("/v1/judge", json=group()).json()
    without = client.post("/v1/judge", json=free()).json()
    again = client.post("/v1/judge", json=free(3)).json()
    assert without["grader_fingerprint"] != with_one["grader_fingerprint"]
    assert without["grader_fingerprint"] == again["grader_fingerprint"]


@pytest.mark.parametrize("grader", ["similarity", "numbers", "exact", "contains", "label", "json-fields"])
def test_a_rule_grader_that_compares_with_the_reference_refuses_the_group(
    client: TestClient, grader: str
) -> None:
    reply = client.post("/v1/judge", json=free(grader=grader))
    assert reply.status_code == 422, reply.text
    assert f"grader '{grader}' compares each answer with the reference, and this group has none" in reply.text
    assert "send a reference" in reply.text


def test_a_blend_with_such_a_grader_is_refused_whole_and_the_json_check_needs_none(
    client: TestClient,
) -> None:
    blend = client.post("/v1/judge", json=free(grader="judge+similarity"))
    assert blend.status_code == 422 and "grader 'similarity'" in blend.text
    checked = client.post("/v1/judge", json=free(grader="json"))
    assert checked.status_code == 200, checked.text
    assert {a["score"] for a in checked.json()["answers"]} == {0.0}  # "Answer 0: click Share." is no JSON


def test_per_answer_decoding_and_marks_only_have_their_own_prompts(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    per_answer = client.post("/v1/judge", json=free(decoding="per_answer")).json()
    marks_only = client.post("/v1/judge", json=free(reasons="none")).json()
    assert per_answer["prompt_version"].startswith("judge_group/no_reference@")
    assert marks_only["prompt_version"].startswith("judge_group/no_reference@")
    assert per_answer["prompt_version"] != marks_only["prompt_version"]
    assert all(a["score"] is not None for a in per_answer["answers"] + marks_only["answers"])
    assert "reference" not in prompt_text(fake_backend)
    explained = client.post(f"/v1/judgements/{marks_only['judgement_id']}/reasons")
    assert explained.status_code == 200, explained.text
    assert "reference" not in prompt_text(fake_backend)


def test_comparisons_and_rubrics_without_a_reference(client: TestClient, fake_backend: FakeBackend) -> None:
    compared = client.post("/v1/judge", json=free(3, grader="pairwise"))
    assert compared.status_code == 200, compared.text
    assert compared.json()["prompt_version"].startswith("judge_group/no_reference@")
    rubric = client.post("/v1/rubrics", json={"conversation": free()["conversation"]})
    assert rubric.status_code == 200, rubric.text
    assert rubric.json()["prompt_version"].startswith("judge_group/no_reference@")
    judged = client.post("/v1/judge", json=free(rubric="generate"))
    assert judged.status_code == 200, judged.text
    assert "reference" not in prompt_text(fake_backend)


def test_canaries_built_from_the_reference_are_not_drawn_for_a_group_without_one(client: TestClient) -> None:
    twisted = client.post("/v1/judge", json=free(canaries=["reference_twist", "verbose_wrong"])).json()
    assert not twisted.get("canaries")
    refusal = client.post("/v1/judge", json=free(canaries=["reference_twist", "refusal"])).json()
    assert [
        c["kind"] for c in client.get(f"/v1/judgements/{refusal['judgement_id']}").json()["canaries"]
    ] == ["refusal"]


def test_a_prompt_folder_without_reference_free_prompts_refuses_the_group_with_what_to_do(
    tmp_path: Path,
) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(
        PACKAGED_PROMPTS / "judge_group", prompts / "mine", ignore=shutil.ignore_patterns("no_reference")
    )
    with make_client(tmp_path, FakeBackend(), prompts_dir=prompts, prompt_template="mine") as client:
        wait_ready(client)
        reply = client.post("/v1/judge", json=free())
        assert reply.status_code == 422, reply.text
        assert "cannot judge a group without a reference; send a reference, or add those files" in reply.text
        assert client.post("/v1/judge", json=group()).status_code == 200
