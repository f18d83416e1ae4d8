"""The Idempotency-Key over HTTP, field by field: a judge request, or a group of a batch, that differs from
the one stored under its key in any one field is a 409 (for a batch, in that group's slot alone); the same
request, fields at their defaults spelled out or not, gets the stored judgement back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import assume, given, settings
from pydantic import ValidationError

from judge_service.backends.fake import FakeBackend
from judge_service.schemas import JudgeRequest
from tests.api.conftest import group, make_client, wait_ready
from tests.request_changes import JUDGE_FIELDS, change

STORED = group(2, run_id="identity")
OTHER = group(3, run_id="identity")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str, list[str]]]:
    """A service holding STORED under key "one", and the batch [STORED, OTHER] under key "many"."""
    with make_client(tmp_path_factory.mktemp("identity"), FakeBackend(record=False)) as client:
        wait_ready(client)
        single = client.post("/v1/judge", json=STORED, headers={"Idempotency-Key": "one"})
        batch = client.post(
            "/v1/judge/batch", json={"groups": [STORED, OTHER]}, headers={"Idempotency-Key": "many"}
        )
        assert single.status_code == batch.status_code == 200
        ids = [item["judgement"]["judgement_id"] for item in batch.json()["results"]]
        yield client, single.json()["judgement_id"], ids


def changed(body: dict[str, Any], field: str, value: Any) -> tuple[dict[str, Any], bool]:
    """The body with one field changed, and whether it is still the same request (equal validated)."""
    try:
        request = JudgeRequest.model_validate(body | {field: value})
    except ValidationError:
        assume(False)  # a value the field takes, refused beside the others (criteria and rubric)
        raise
    same = request.model_dump(mode="json") == JudgeRequest.model_validate(body).model_dump(mode="json")
    return body | {field: value}, same


@settings(max_examples=100, deadline=None)
@given(field_value=change(JUDGE_FIELDS))
def test_any_one_field_changed_under_the_key_is_409_and_the_same_request_replays(
    judged: tuple[TestClient, str, list[str]], field_value: tuple[str, Any]
) -> None:
    client, judgement_id, _ = judged
    body, same = changed(STORED, *field_value)
    response = client.post("/v1/judge", json=body, headers={"Idempotency-Key": "one"})
    if same:
        assert response.status_code == 200 and response.json()["judgement_id"] == judgement_id
    else:
        assert response.status_code == 409, (field_value, response.text)
        assert response.json()["error"]["details"] == {"judgement_id": judgement_id}


@settings(max_examples=100, deadline=None)
@given(field_value=change(JUDGE_FIELDS))
def test_any_one_field_changed_in_a_batch_group_is_409_in_its_slot_alone(
    judged: tuple[TestClient, str, list[str]], field_value: tuple[str, Any]
) -> None:
    client, _, ids = judged
    body, same = changed(OTHER, *field_value)
    response = client.post(
        "/v1/judge/batch", json={"groups": [STORED, body]}, headers={"Idempotency-Key": "many"}
    )
    first, second = response.json()["results"]
    assert first["judgement"]["judgement_id"] == ids[0]
    if same:
        assert second["judgement"]["judgement_id"] == ids[1]
    else:
        assert second["judgement"] is None and second["error"]["code"] == "conflict", field_value
