"""A German group end to end through the service: the numbers grader reads the group's figures as German,
ROUGE-L keeps umlauts and German punctuation, the blends combine them, the judge's prompt carries the German
text intact and, with `reason_language`, asks for German reasons; everything is stored and read back."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from judge_service.judging.llm.prompt import REASON_LANGUAGE_LINE

QUESTION = "Wie viel kostet die Jahreslizenz für das Team, und wie viele Plätze sind enthalten?"
REFERENCE = "Die Jahreslizenz kostet 1.250 € und umfasst 12.500 Plätze für das gesamte Team."
RIGHT = "Sie kostet 1250 Euro, und es sind 12500 Plätze enthalten – für das ganze Team."
THOUSAND_OFF = "Sie kostet 1,25 Euro und umfasst 12,5 Plätze."
UMLAUTS = "Die Jahreslizenz kostet 1.250 € und umfasst 12.500 Plätze für das gesamte Team!"


def german_group(*texts: str, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": QUESTION}],
        "reference": REFERENCE,
        "answers": [{"id": f"a{i}", "text": text} for i, text in enumerate(texts)],
        **extra,
    }


def test_numbers_reads_the_german_group_as_german(client: TestClient) -> None:
    body = client.post("/v1/judge", json=german_group(RIGHT, THOUSAND_OFF, grader="numbers")).json()
    right, off = body["answers"]
    assert (right["score"], off["score"]) == (1.0, 0.0)
    explanation = right["terms"][0]["explanation"]
    assert "1.250 € (=1,250)~1250 Euro" in explanation and "decimal comma" in explanation
    stored = client.get(f"/v1/judgements/{body['judgement_id']}").json()
    assert stored["answers"] == body["answers"]


def test_similarity_keeps_umlauts_and_german_punctuation(client: TestClient) -> None:
    body = client.post("/v1/judge", json=german_group(UMLAUTS, RIGHT, grader="similarity")).json()
    same, other = body["answers"]
    assert same["score"] == 1.0  # "Plätze", "für", "€" and "!" do not break the match
    assert 0.2 < other["score"] < 1.0


def test_blends_combine_the_german_figures_with_the_judge(client: TestClient) -> None:
    body = client.post("/v1/judge", json=german_group(RIGHT, THOUSAND_OFF, grader="judge+numbers")).json()
    right, off = body["answers"]
    numbers = {a["id"]: next(t for t in a["terms"] if t["grader"] == "numbers") for a in body["answers"]}
    assert (numbers["a0"]["score"], numbers["a1"]["score"]) == (1.0, 0.0)
    assert right["score"] > off["score"]


def test_the_judge_sees_the_german_text_intact(client: TestClient, fake_backend: FakeBackend) -> None:
    client.post("/v1/judge", json=german_group(RIGHT, THOUSAND_OFF))
    prompt = "\n".join(m["content"] for m in fake_backend.requests[-1].messages)
    for text in (QUESTION, RIGHT, "Plätze", "1.250 €"):
        assert text in prompt
    assert "Write every reason in" not in prompt  # the default is as before: no language asked


@pytest.mark.parametrize(("option", "language"), [("auto", "German"), ("fr", "French")])
def test_reason_language_asks_the_judge_for_reasons_in_a_language(
    client: TestClient, fake_backend: FakeBackend, option: str, language: str
) -> None:
    plain = client.post("/v1/judge", json=german_group(RIGHT)).json()
    body = client.post("/v1/judge", json=german_group(RIGHT, reason_language=option)).json()
    system = fake_backend.requests[-1].messages[0]["content"]
    assert system.endswith(REASON_LANGUAGE_LINE.format(language))
    assert body["grader_fingerprint"] != plain["grader_fingerprint"]
    assert body["prompt_version"] == plain["prompt_version"]  # the templates are the same


def test_reason_language_auto_asks_nothing_when_the_language_cannot_be_told(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    group = german_group(RIGHT, reason_language="auto")
    group["conversation"] = [{"role": "user", "content": "1.250?"}]
    assert client.post("/v1/judge", json=group).status_code == 200
    assert "Write every reason in" not in fake_backend.requests[-1].messages[0]["content"]


def test_reason_language_is_checked(client: TestClient) -> None:
    response = client.post("/v1/judge", json=german_group(RIGHT, reason_language="klingon"))
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_request"
