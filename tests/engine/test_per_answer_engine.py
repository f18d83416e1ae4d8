"""Per-answer decoding and expected marks on the real engine (the embedded judge's defaults)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from tests.engine.test_engine_judge import CRITERIA, FOUR_ANSWERS, _group, _prefix_cache
from tests.service_process import metric_value

pytestmark = pytest.mark.engine

A_WORD = re.compile(r"[A-Za-z]{3,}")
DIGITS_AND_DOTS = re.compile(r"\d[.]\d[.]\d")


def _fresh_group(run_id: str, **extra: Any) -> dict[str, Any]:
    """The README's group under a conversation no earlier test sent, so no other group's prompt can
    be in the prefix cache beyond the rubric."""
    body = _group(run_id, 0, FOUR_ANSWERS) | extra
    body["conversation"][0]["content"] += f" (ticket {uuid.uuid4().hex})"
    return body


def test_per_answer_decoding_marks_every_answer_over_a_prefix_the_engine_computes_once(
    served: httpx.Client,
) -> None:
    queried_before, hits_before = _prefix_cache(served.get("/metrics").text)
    response = served.post("/v1/judge", json=_fresh_group("engine-per-answer", decoding="per_answer"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["usage"]["judge_calls"] == 4  # one engine request per answer, no retry needed
    for answer in body["answers"]:
        assert answer["status"] == "scored", answer
        assert set(answer["criteria"]) == CRITERIA
        for mark in answer["criteria"].values():
            assert 1 <= mark["mark"] <= 5 and mark["score"] == (mark["mark"] - 1) / 4
            # Reasons are words, under the grammar's pattern: no "4.5", no "1.1.1.1...".
            assert A_WORD.search(mark["reason"]) and not DIGITS_AND_DOTS.search(mark["reason"]), mark
    queried, hits = (
        after - before
        for after, before in zip(
            _prefix_cache(served.get("/metrics").text), (queried_before, hits_before), strict=True
        )
    )
    prompt_tokens = body["usage"]["prompt_tokens"]
    assert queried >= prompt_tokens * 0.9, (queried, prompt_tokens)
    # The four prompts share everything up to the answer's name: the three after the first find the
    # shared part in the cache, whole blocks of it (so a little under 3/4 of all prompt tokens).
    assert hits >= 0.45 * queried, (hits, queried, prompt_tokens)
    stored = served.get(f"/v1/judgements/{body['judgement_id']}").json()
    assert len(stored["raw_outputs"]) == 4


def test_expected_marks_from_the_engines_log_probabilities(served: httpx.Client) -> None:
    response = served.post("/v1/judge", json=_fresh_group("engine-expected", score_from="expected"))
    assert response.status_code == 200, response.text
    expected_marks = []
    for answer in response.json()["answers"]:
        assert answer["status"] == "scored", answer
        assert answer["explanation"].endswith("from expected marks"), answer
        overall = 0.0
        for mark in answer["criteria"].values():
            expected = mark["expected_mark"]
            assert 1 <= expected <= 5
            expected_marks.append(expected)
            assert mark["score"] == pytest.approx((expected - 1) / 4, abs=1e-6)
            overall += mark["score"] / 4
        assert answer["score"] == pytest.approx(overall, abs=1e-5)
    # A judge is never certain of all 16 marks: its spread over the other digits shows.
    assert any(e != round(e) for e in expected_marks), expected_marks


def test_the_group_decoding_still_marks_every_answer_in_one_reply(served: httpx.Client) -> None:
    response = served.post("/v1/judge", json=_fresh_group("engine-group", decoding="group"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["usage"]["judge_calls"] >= 1
    assert all(a["status"] == "scored" for a in body["answers"]), body
    assert all(m["expected_mark"] is not None for a in body["answers"] for m in a["criteria"].values())
    metrics = served.get("/metrics").text
    assert metric_value(metrics, "judge_engine_waiting_requests") == 0
