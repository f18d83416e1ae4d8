"""Rubrics on the real engine (the embedded judge): it writes a checklist under the rubric schema, which is
stored and reused, and judges a group on it with a true/false per item, the probability of "met" located
in its log-probabilities. The 135M judge's checklists say little; the test proves the machinery."""

from __future__ import annotations

import httpx
import pytest

from tests.engine.test_per_answer_engine import _fresh_group

pytestmark = pytest.mark.engine


def test_a_written_rubric_is_stored_and_a_group_is_judged_on_it(served: httpx.Client) -> None:
    body = _fresh_group("engine-rubric", decoding="per_answer", score_from="expected", reasons="none")
    asked = {"conversation": body["conversation"], "reference": body["reference"], "items": 4}
    written = served.post("/v1/rubrics", json=asked)
    assert written.status_code == 200, written.text
    rubric = written.json()
    assert [c["name"] for c in rubric["criteria"]] == ["item_1", "item_2", "item_3", "item_4"]
    assert all(c["scale"] == "binary" and c["description"].strip() for c in rubric["criteria"])
    assert any(c["kind"] != "pitfall" for c in rubric["criteria"])
    assert rubric["usage"]["judge_calls"] >= 1 and rubric["judge_model"]
    assert served.post("/v1/rubrics", json=asked).json() == rubric  # stored: not written again

    response = served.post("/v1/judge", json={**body, "rubric": rubric["id"]})
    assert response.status_code == 200, response.text
    judged = response.json()
    assert judged["rubric"]["id"] == rubric["id"]
    for answer in judged["answers"]:
        assert answer["status"] == "scored", answer
        for item in answer["criteria"].values():
            assert item["mark"] is None and isinstance(item["met"], bool)
            assert item["met_probability"] is not None and 0 <= item["met_probability"] <= 1, item
            assert item["score"] == pytest.approx(item["met_probability"])
        assert 0 <= answer["score"] <= 1
    # Four true/false values an answer: a handful of tokens each.
    assert judged["usage"]["completion_tokens"] <= 4 * 30, judged["usage"]
