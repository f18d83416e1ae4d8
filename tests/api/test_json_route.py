"""The judging routes read their body and write their reply without FastAPI's generic handling
(api/json_route.py): what a caller sees stays what every route answers, and the description is FastAPI's."""

from __future__ import annotations

import json

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from judge_service.api.json_route import NOT_JSON, JSONRoute, post_json
from judge_service.schemas import JudgeRequest, JudgeResponse

from .conftest import group


def test_a_group_is_judged_and_its_reply_is_the_models_json(client: TestClient) -> None:
    response = client.post("/v1/judge", json=group(3))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    reply = JudgeResponse.model_validate_json(response.content)
    assert [a.id for a in reply.answers] == ["a0", "a1", "a2"]


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/vnd.trainer+json"])
def test_json_under_another_json_type_is_read(client: TestClient, content_type: str) -> None:
    response = client.post("/v1/judge", content=json.dumps(group(2)), headers={"content-type": content_type})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("headers", [{}, {"content-type": "text/plain"}])
def test_a_body_not_sent_as_json_is_a_422_that_says_to_send_json(
    client: TestClient, headers: dict[str, str]
) -> None:
    response = client.post("/v1/judge", content=json.dumps(group(2)), headers=headers)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"
    assert NOT_JSON in response.json()["error"]["message"]


def test_malformed_json_is_a_422_that_says_where(client: TestClient) -> None:
    response = client.post(
        "/v1/judge/batch", content=b'{"groups": [', headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert "Invalid JSON" in response.json()["error"]["message"]


def test_a_field_error_is_located_in_the_body(client: TestClient) -> None:
    response = client.post("/v1/judge", json={**group(2), "answers": [{"id": "a", "text": 5}]})
    assert response.status_code == 422
    fields = [problem["field"] for problem in response.json()["error"]["details"]]
    assert fields == ["answers.0.text"]


def test_a_declared_header_is_still_validated(client: TestClient) -> None:
    response = client.post("/v1/judge", json=group(2), headers={"Idempotency-Key": "has space"})
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["error"]["message"]


@pytest.mark.parametrize("name", ["Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY"])
def test_a_declared_header_is_read_whatever_its_case(client: TestClient, name: str) -> None:
    """Requests without the header skip FastAPI's header reading; one that sends it, in any case, is read:
    the same key and body replay the stored judgement."""
    first = client.post("/v1/judge", json=group(2), headers={name: f"case-{name}"})
    again = client.post("/v1/judge", json=group(2), headers={name: f"case-{name}"})
    other = client.post("/v1/judge", json=group(3), headers={name: f"case-{name}"})
    assert first.status_code == again.status_code == 200, first.text
    assert again.json()["judgement_id"] == first.json()["judgement_id"]
    assert other.status_code == 409


def test_a_route_with_what_a_json_route_does_not_read_is_refused_when_made() -> None:
    router = APIRouter()

    async def with_query(request: JudgeRequest, page: int = 1) -> JudgeResponse:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="body, the Request and headers only"):
        post_json(router, "/x")(with_query)

    async def without_model(payload: dict[str, int]) -> JudgeResponse:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="one pydantic model"):
        post_json(router, "/y")(without_model)


def test_the_description_is_what_fastapi_writes_for_the_same_endpoint() -> None:
    async def endpoint(request: JudgeRequest) -> JudgeResponse:
        raise AssertionError("never called")

    described = []
    for route_class in (None, JSONRoute):
        app = FastAPI()
        app.router.add_api_route(
            "/judge",
            endpoint,
            methods=["POST"],
            response_model=JudgeResponse,
            route_class_override=route_class,
        )
        described.append(app.openapi())
    assert described[0] == described[1]


def test_a_lone_surrogate_in_a_role_is_a_422_not_a_500(client: TestClient) -> None:
    """pydantic's JSON parser refuses a lone surrogate; Python's reads it, and the role's error message
    must still be encodable."""
    body = (
        '{"conversation": [{"role": "\\ud800", "content": "x", "tool_call_id": "c1"}],'
        ' "answers": [{"id": "a", "text": "x"}]}'
    )
    for path, raw in (("/v1/judge", body), ("/v1/judge/batch", f'{{"groups": [{body}]}}')):
        response = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert "not a '\\ud800' turn" in response.json()["error"]["message"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_a_body_in_another_unicode_encoding_is_read_as_fastapi_reads_it(
    client: TestClient, encoding: str
) -> None:
    raw = json.dumps(group(2)).encode(encoding)
    response = client.post("/v1/judge", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("path", ["/v1/judge", "/v1/rubrics"])
def test_a_body_of_many_unknown_keys_names_the_first_problems_and_how_many_more(
    client: TestClient, path: str
) -> None:
    """A JSON route and a route FastAPI reads alike: 20,000 problems are not 20,000 entries in the reply."""
    body = {**group(2), **{f"k{i}": 0 for i in range(20_000)}}
    response = client.post(path, json=body)
    assert response.status_code == 422
    details = response.json()["error"]["details"]
    assert len(details) == 51
    assert details[-1]["problem"].startswith("and ") and "more problems" in details[-1]["problem"]
