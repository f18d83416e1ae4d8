"""Comparison grading on the real engine: the embedded judge compares a group's answers pairwise, in both
orders, concurrently over a shared prompt prefix, and each answer gets a Bradley-Terry score and its
record. (The 135M judge's verdicts are what they are; this proves the path, not the judge's taste.)"""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.engine.test_engine_judge import FOUR_ANSWERS, _group, _prefix_cache

pytestmark = pytest.mark.engine


def test_pairwise_compares_every_pair_in_both_orders_on_the_engine(served: httpx.Client) -> None:
    body = _group("engine-pairwise", 0, FOUR_ANSWERS) | {"grader": "pairwise"}
    body["conversation"][0]["content"] += f" (ticket {uuid.uuid4().hex})"
    queried_before, hits_before = _prefix_cache(served.get("/metrics").text)
    response = served.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    judged = response.json()
    stored = served.get(f"/v1/judgements/{judged['judgement_id']}").json()
    comparisons = stored["comparisons"]
    assert len(comparisons) == 12  # 6 pairs, each way
    succeeded = [c for c in comparisons if c["verdict"] is not None]
    # The engine's structured output keeps every reply to the verdict schema.
    assert len(succeeded) == 12, [c["error"] for c in comparisons if c["error"]]
    for c in succeeded:
        assert set(c["verdict"]) == {"correctness", "helpfulness", "tone", "format"}
        assert all(1 <= v <= 5 for v in c["verdict"].values()) and 0 <= c["preference"] <= 1
    for answer in judged["answers"]:
        assert answer["status"] == "scored" and 0 < answer["score"] < 1, answer
        tally = answer["comparison"]
        assert tally["wins"] + tally["losses"] + tally["ties"] == 6 and tally["failed"] == 0
    assert judged["usage"]["judge_calls"] == 12 and stored["prompt_version"].startswith("judge_group@")
    # The comparisons share the rubric, conversation and reference: most prompt tokens come from cache.
    queried, hits = (
        after - before
        for after, before in zip(
            _prefix_cache(served.get("/metrics").text), (queried_before, hits_before), strict=True
        )
    )
    assert hits >= 0.4 * queried, (hits, queried)
