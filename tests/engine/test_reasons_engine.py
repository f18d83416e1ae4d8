"""Marks only and reasons on demand on the real engine (the embedded judge): the marks-only reply is a few
tokens an answer with its expected marks located, and the reasons written afterwards reuse the judged
prompt from the engine's prefix cache and change no score."""

from __future__ import annotations

import httpx
import pytest

from tests.engine.test_engine_judge import _prefix_cache
from tests.engine.test_per_answer_engine import _fresh_group

pytestmark = pytest.mark.engine


def test_marks_only_then_reasons_on_demand(served: httpx.Client) -> None:
    body = _fresh_group("engine-reasons", decoding="per_answer", reasons="none", score_from="expected")
    response = served.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    judged = response.json()
    assert judged["reasons"] == "none" and judged["usage"]["judge_calls"] == 4
    for answer in judged["answers"]:
        assert answer["status"] == "scored", answer
        assert answer["explanation"].endswith("from expected marks"), answer  # located in the bare reply
        assert all(c["reason"] is None and 1 <= c["expected_mark"] <= 5 for c in answer["criteria"].values())
    # {"correctness":4,"helpfulness":2,"tone":3,"format":4} is about 19 tokens on this tokenizer.
    assert judged["usage"]["completion_tokens"] <= 4 * 30, judged["usage"]

    queried_before, hits_before = _prefix_cache(served.get("/metrics").text)
    explained = served.post(f"/v1/judgements/{judged['judgement_id']}/reasons")
    assert explained.status_code == 200, explained.text
    reasons = explained.json()
    queried, hits = (
        after - before
        for after, before in zip(
            _prefix_cache(served.get("/metrics").text), (queried_before, hits_before), strict=True
        )
    )
    # Every answer has its reasons, or says why not; the judged prompts were still in the cache.
    ids = [a["id"] for a in judged["answers"]]
    assert sorted([*reasons["answers"], *reasons["failures"]]) == sorted(ids)
    assert reasons["answers"], reasons
    for by_criterion in reasons["answers"].values():
        assert set(by_criterion) == {"correctness", "helpfulness", "tone", "format"}
        assert all(reason.strip() for reason in by_criterion.values())
    assert hits >= 0.6 * queried, (hits, queried)
    stored = served.get(f"/v1/judgements/{judged['judgement_id']}").json()
    assert stored["answers"] == judged["answers"] and stored["explained"] == reasons
    assert served.post(f"/v1/judgements/{judged['judgement_id']}/reasons").json() == reasons
