"""Rule graders and blends through the API: selectable per request, stored, never a silent 0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from tests.api.conftest import make_client, wait_ready

REFERENCE = "Open the report, click Share and pick the client."
FINANCE_REF = "WACC ~ 9.91%; cost of equity 10.34%; after-tax debt 4.15%; EV ~ $1,705M."
CRITERIA = ["correctness", "helpfulness", "tone", "format"]


def _group(reference: str, texts: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "Question?"}],
        "reference": reference,
        "answers": [{"id": f"a{i}", "text": t} for i, t in enumerate(texts)],
        **extra,
    }


def test_similarity_needs_no_judge_call(client: TestClient, fake_backend: FakeBackend) -> None:
    texts = ["Click Share on the report and pick the client.", REFERENCE]
    body = client.post("/v1/judge", json=_group(REFERENCE, texts, grader="similarity")).json()
    assert body["grader"] == "similarity" and body["judge_model"] is None and body["attempts"] == 0
    first, same = body["answers"]
    assert first["score"] == pytest.approx(0.67, abs=0.01) and first["status"] == "scored"
    assert same["score"] == 1.0
    assert first["explanation"] and first["criteria"] is None
    assert fake_backend.requests == []
    stored = client.get(f"/v1/judgements/{body['judgement_id']}").json()
    assert stored["answers"] == body["answers"]


def test_numbers_grader_scores_figures(client: TestClient) -> None:
    texts = ["WACC 9.95%, cost of equity 10.3%, debt 4.2%, EV 1,700M.", "WACC is 1.33%"]
    body = client.post("/v1/judge", json=_group(FINANCE_REF, texts, grader="numbers")).json()
    assert [a["score"] for a in body["answers"]] == [0.875, 0.0]


def test_numbers_without_reference_figures_is_unscored_not_zero(client: TestClient) -> None:
    body = client.post("/v1/judge", json=_group(REFERENCE, ["anything"], grader="numbers")).json()
    answer = body["answers"][0]
    assert answer["status"] == "unscored" and answer["score"] is None and answer["error"]
    assert body["status"] == "failed"


def _judge_score(answer: dict[str, Any]) -> float:
    return sum(m["score"] for m in answer["criteria"].values()) / len(answer["criteria"])


def test_judge_plus_similarity_is_70_30(client: TestClient) -> None:
    texts = ["Click Share on the report and pick the client."]
    body = client.post("/v1/judge", json=_group(REFERENCE, texts, grader="judge+similarity")).json()
    answer = body["answers"][0]
    judge_score = _judge_score(answer)
    similarity = next(t["score"] for t in answer["terms"] if t["grader"] == "similarity")
    assert answer["score"] == pytest.approx(0.7 * judge_score + 0.3 * similarity, abs=1e-6)
    assert [t["grader"] for t in answer["terms"]] == ["judge", "similarity"]
    assert body["judge_model"] == "fake-judge" and body["attempts"] == 1


def test_judge_plus_numbers_falls_back_to_the_judge_without_figures(client: TestClient) -> None:
    body = client.post("/v1/judge", json=_group(REFERENCE, ["Click Share."], grader="judge+numbers")).json()
    answer = body["answers"][0]
    assert answer["score"] == pytest.approx(_judge_score(answer), abs=1e-6)


def test_custom_terms_are_not_normalized(client: TestClient) -> None:
    terms = [{"grader": "similarity", "weight": 2.0}, {"grader": "contains", "weight": 1.0}]
    texts = [REFERENCE + " Done."]
    body = client.post("/v1/judge", json=_group(REFERENCE, texts, terms=terms)).json()
    answer = body["answers"][0]
    sim = answer["terms"][0]["score"]
    assert body["grader"] == "custom"
    assert answer["score"] == pytest.approx(2 * sim + 1.0, abs=1e-6)
    assert answer["score"] > 1.0


def test_judge_failure_in_a_blend_leaves_the_answer_unscored(tmp_path: Path) -> None:
    partial = json.dumps({"a0": {c: {"reason": "fine", "mark": 5} for c in CRITERIA}})
    with make_client(tmp_path, FakeBackend(script=[partial]), parse_retries=0) as c:
        wait_ready(c)
        payload = _group(REFERENCE, [REFERENCE, REFERENCE], grader="judge+similarity")
        body = c.post("/v1/judge", json=payload).json()
        ok, failed = body["answers"]
        assert ok["status"] == "scored" and ok["score"] == pytest.approx(1.0)
        assert failed["status"] == "unscored" and failed["score"] is None
        assert "judge" in failed["error"]
        assert body["status"] == "partial"


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"grader": "rouge"}, "rouge"),
        ({"terms": [{"grader": "judge+numbers", "weight": 1}]}, "judge+numbers"),
        ({"grader": "label", "options": {"labels": ["yes", "no"]}}, "label"),
        ({"grader": "json-fields"}, "json-fields"),
        ({"grader": "json", "options": {"json_schema": {"type": 12}}}, "json"),
    ],
)
def test_grader_misuse_is_a_clear_422(client: TestClient, payload: dict[str, Any], fragment: str) -> None:
    response = client.post("/v1/judge", json=_group("maybe", ["x"], **payload))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_group"
    assert fragment in error["message"]


def test_label_and_json_fields_graders(client: TestClient) -> None:
    labels = {"grader": "label", "options": {"labels": ["positive", "negative", "neutral"]}}
    body = client.post(
        "/v1/judge", json=_group("positive", ["Positive.", "negative", "great"], **labels)
    ).json()
    assert [a["score"] for a in body["answers"]] == [1.0, 0.0, 0.0]
    ref = '{"city": "Paris", "population": 2100000, "country": "FR"}'
    texts = ['Here: ```json\n{"city": "paris", "population": 2.1e6, "country": "DE"}\n```']
    body = client.post("/v1/judge", json=_group(ref, texts, grader="json-fields")).json()
    assert body["answers"][0]["score"] == pytest.approx(2 / 3)


DEEP = '{"a":' * 2000 + "1" + "}" * 2000  # deeper than Python's JSON reader goes
FAIRLY_DEEP = '{"a":' * 300 + "1" + "}" * 300  # readable, too deep for a recursive schema check


@pytest.mark.parametrize(
    ("grader", "answer", "options", "status", "explained"),
    [
        ("json", DEEP, {}, "scored", "nested too deeply"),
        ("json-fields", DEEP, {}, "scored", "nested too deeply"),
        (
            "json",
            FAIRLY_DEEP,
            {
                "json_schema": {
                    "type": "object",
                    "properties": {"a": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}},
                }
            },
            "unscored",
            "nested too deeply for json to check",
        ),
    ],
)
def test_deeply_nested_json_answers_are_graded_or_unscored_never_a_500(
    client: TestClient, grader: str, answer: str, options: dict[str, Any], status: str, explained: str
) -> None:
    body = {
        "conversation": [{"role": "user", "content": "Reply in JSON."}],
        "reference": '{"a": 1}',
        "answers": [{"id": "deep", "text": answer}, {"id": "fine", "text": '{"a": 1}'}],
        "grader": grader,
        "options": options,
    }
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    deep, fine = response.json()["answers"]
    assert deep["status"] == status and explained in deep["terms"][0]["explanation"]
    assert deep["score"] == (0.0 if status == "scored" else None)
    assert fine["status"] == "scored" and fine["score"] == 1.0


def test_large_groups_are_rule_graded_off_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    offloaded: list[str] = []
    to_thread = asyncio.to_thread

    async def recording(fn: Any, *args: Any) -> Any:
        offloaded.append(fn.__name__)
        return await to_thread(fn, *args)

    monkeypatch.setattr(asyncio, "to_thread", recording)
    small = client.post("/v1/judge", json=_group(REFERENCE, ["Click Share."] * 3, grader="similarity"))
    assert small.status_code == 200 and offloaded == []
    big_texts = [("Click Share on the report. " * 800)[:20_000]] * 3  # 60,000 characters
    big = client.post("/v1/judge", json=_group(REFERENCE, big_texts, grader="similarity"))
    assert big.status_code == 200 and offloaded == ["_grade_all"]  # judging/rules/base.py
    assert all(a["status"] == "scored" and 0 < a["score"] < 1 for a in big.json()["answers"])


@pytest.mark.parametrize("depth", [65, 900])
def test_a_json_schema_nested_past_the_limit_is_a_422_saying_what_to_fix(
    client: TestClient, depth: int
) -> None:
    raw = '{"not":' * (depth - 1) + '{"type": "object"}' + "}" * (depth - 1)
    body = _group('{"a": 1}', ['{"a": 1}'], grader="json")
    text = json.dumps(body)[:-1] + ', "options": {"json_schema": ' + raw + "}}"
    response = client.post("/v1/judge", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 422
    message = response.json()["error"]["message"]
    assert "options.json_schema" in message and "deeper than 64 levels" in message


def test_a_json_schema_at_the_depth_limit_is_used(client: TestClient) -> None:
    raw = '{"not":' * 31 + '{"type": "string"}' + "}" * 31  # 32 levels; odd count of "not": not a string
    body = _group('{"a": 1}', ['{"a": 1}', '"text"'], grader="json")
    text = json.dumps(body)[:-1] + ', "options": {"json_schema": ' + raw + "}}"
    response = client.post("/v1/judge", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert [a["score"] for a in response.json()["answers"]] == [1.0, 0.0]
