"""Canary answers on the real engine (the embedded judge): planted in both decodings, judged by the model,
kept out of the response, stored apart with their score and place."""

from __future__ import annotations

import httpx
import pytest

from tests.engine.test_per_answer_engine import _fresh_group

pytestmark = pytest.mark.engine


@pytest.mark.parametrize("decoding", ["per_answer", "group"])
def test_a_canary_is_judged_by_the_model_and_never_returned(served: httpx.Client, decoding: str) -> None:
    body = _fresh_group("engine-canaries", decoding=decoding, canaries=["injection"])
    caller_ids = [a["id"] for a in body["answers"]]
    response = served.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert [a["id"] for a in reply["answers"]] == caller_ids
    assert all(sorted(order) == sorted(caller_ids) for order in reply["answer_orders"])
    stored = served.get(f"/v1/judgements/{reply['judgement_id']}").json()
    (canary,) = stored["canaries"]
    assert canary["kind"] == "injection" and canary["id"] not in caller_ids
    assert canary["status"] == "scored" and 0.0 <= canary["score"] <= 1.0  # the model marked it
    assert set(canary["criteria"]) == {"correctness", "helpfulness", "tone", "format"}
    assert canary["outranked"] in (True, False) and len(canary["shown_at"]) == 1
    # Its cost is the caller's to see: one more engine request per-answer, a longer prompt in a group.
    assert reply["usage"]["judge_calls"] == (len(caller_ids) + 1 if decoding == "per_answer" else 1)
    if decoding == "group":  # the one reply marks the canary beside the caller's answers
        assert canary["id"] in stored["raw_outputs"][0]
    else:  # a reply of its own
        assert len(stored["raw_outputs"]) == len(caller_ids) + 1
