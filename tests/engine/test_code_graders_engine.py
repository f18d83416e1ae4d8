"""The support grader of docs/graders/code.md end to end on the real engine: facts checked in code from
the task row (`item`), the embedded judge's tone score blended on top (`terms`); and an RFT label_model
grader answered by the real judge model through the hosted API's run route."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.engine

TONE = {
    "name": "tone",
    "description": "Is the answer polite and calm?",
    "mark_1": "Rude or dismissive.",
    "mark_5": "Polite and calm throughout.",
}
SUPPORT_GROUP: dict[str, Any] = {
    "conversation": [{"role": "user", "content": "Can I get single sign-on on my plan?"}],
    "reference": "Single sign-on (SSO) comes with the Business plan; you can upgrade in Settings.",
    "answers": [
        {"id": "right", "text": "Yes: SSO is part of the Business plan. You can upgrade in Settings."},
        {"id": "partial", "text": "SSO is available, please check your settings."},
        {"id": "wrong", "text": "SSO comes with the free plan, no upgrade needed."},
    ],
    "item": {"facts": ["business plan", "sso"], "forbidden": ["free plan"]},
    "criteria": [TONE],
    "terms": [{"grader": "support_facts", "weight": 0.7}, {"grader": "judge", "weight": 0.3}],
    "run_id": "support-code-grader",
}


def test_support_grader_blends_code_facts_with_the_judges_tone(served: httpx.Client) -> None:
    response = served.post("/v1/judge", json=SUPPORT_GROUP)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["judge_model"] and body["grader"] == "custom"
    for answer in body["answers"]:
        facts, tone = answer["terms"]
        assert facts["grader"] == "support_facts" and tone["grader"] == "judge"
        if tone["score"] is not None:  # the judge marked it: the blend is exactly 0.7 facts + 0.3 tone
            assert answer["score"] == pytest.approx(0.7 * facts["score"] + 0.3 * tone["score"], abs=1e-6)
        else:
            assert answer["status"] == "unscored"
    facts_scores = {a["id"]: a["terms"][0]["score"] for a in body["answers"]}
    assert facts_scores == {"right": 1.0, "partial": 0.5, "wrong": 0.0}
    listed = {g["name"]: g for g in served.get("/v1/graders").json()["items"]}
    assert listed["support_facts"]["kind"] == "code"
    assert body["grader_fingerprint"] != listed["judge"]["fingerprint"]


def test_label_model_grader_on_the_real_judge(served: httpx.Client) -> None:
    grader = {
        "type": "label_model",
        "name": "resolved",
        "model": "gpt-4o",
        "input": [
            {"role": "system", "content": "Does the reply answer the customer's question? Label it."},
            {"role": "user", "content": "Reply: {{sample.output_text}}"},
        ],
        "labels": ["answered", "not_answered"],
        "passing_labels": ["answered"],
    }
    response = served.post(
        "/v1/fine_tuning/alpha/graders/run",
        json={"grader": grader, "model_sample": "SSO is part of the Business plan."},
    )
    assert response.status_code == 200, response.text
    result = response.json()
    errors = result["metadata"]["errors"]
    assert not any(value is True for value in errors.values()), errors  # the grammar keeps it to a label
    assert result["reward"] in (0.0, 1.0)
    assert result["metadata"]["sampled_model_name"] and result["metadata"]["token_usage"] > 0
