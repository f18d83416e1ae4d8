"""Comparison grading (`pairwise`, `knockout`) through the API on the fake judge, whose verdicts follow the
marks the answers ask for ("[fake judge: mark N]"): the answer a label calls right ranks first, failed
comparisons are left out and counted (never a 0, never a coin flip), drawn knockout matches are replayed
in the swapped order, and the graders go wherever a grader name goes (batch, blends, member mode,
regrade), with fingerprints that follow their options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import REFUSE_COMPARISONS, FakeBackend
from judge_service.errors import JudgeBackendError
from tests.api.conftest import group, make_client, wait_ready
from tests.api.test_member import post_all, serving
from tests.service_process import metric_value

MODES = ["pairwise", "knockout"]


def marked(marks: list[int], **extra: Any) -> dict[str, Any]:
    """A group whose answer i asks the fake judge for marks[i] (the labelled-right answer: the 5)."""
    body = group(len(marks), **extra)
    for answer, mark in zip(body["answers"], marks, strict=True):
        answer["text"] += f" [fake judge: mark {mark}]"
    return body


def scores(reply: dict[str, Any]) -> dict[str, float | None]:
    return {a["id"]: a["score"] for a in reply["answers"]}


@pytest.mark.parametrize(
    ("grader", "comparison", "seed"),
    [
        ("pairwise", None, None),
        ("pairwise", {"pairwise_score": "winrate"}, None),
        ("pairwise", {"both_orders": False}, None),
        # 5 answers, 5 pairs: each meets two opponents. Who meets whom follows the seed (else the judgement
        # id), and with so few meetings the best answer ranks first only where it met the strong ones.
        ("pairwise", {"max_pairs": 5}, 3),
        ("knockout", None, None),
    ],
)
def test_the_answer_the_judge_prefers_ranks_first(
    client: TestClient, grader: str, comparison: dict[str, Any] | None, seed: int | None
) -> None:
    body = marked([2, 5, 3, 1, 4], grader=grader, comparison=comparison, seed=seed)
    reply = client.post("/v1/judge", json=body).json()
    got = scores(reply)
    assert max(got, key=lambda i: got[i] or 0) == "a1"
    assert all(a["status"] == "scored" and 0 <= a["score"] <= 1 for a in reply["answers"])
    best = next(a for a in reply["answers"] if a["id"] == "a1")
    assert best["comparison"]["losses"] == 0 and best["comparison"]["wins"] >= 1
    if grader == "pairwise" and comparison is None:  # the full order follows the marks
        assert sorted(got, key=lambda i: -(got[i] or 0)) == ["a1", "a4", "a2", "a0", "a3"]
        assert best["comparison"] == {"wins": 8, "losses": 0, "ties": 0, "failed": 0, "byes": None}


def test_pairwise_judges_every_pair_in_both_orders_and_stores_each_comparison(client: TestClient) -> None:
    reply = client.post("/v1/judge", json=marked([5, 1, 3, 2], grader="pairwise", run_id="r-cmp")).json()
    stored = client.get(f"/v1/judgements/{reply['judgement_id']}").json()
    comparisons = stored["comparisons"]
    assert len(comparisons) == 12 and reply["usage"]["judge_calls"] == 12
    shown = {(c["first"], c["second"]) for c in comparisons}
    assert all((b, a) in shown for a, b in shown)  # both orders of each pair
    one = next(c for c in comparisons if (c["first"], c["second"]) == ("a0", "a1"))
    assert one["verdict"] == {name: 1 for name in one["verdict"]}  # A (a0, mark 5) much better
    assert one["preference"] == 0.0 and one["reason"] and one["prompt_tokens"] > 0
    # Page items leave the comparisons to the judgement itself; each answer keeps its tally.
    (item,) = client.get("/v1/runs/r-cmp/judgements").json()["items"]
    assert "comparisons" not in item
    assert item["answers"][0]["comparison"]["wins"] == reply["answers"][0]["comparison"]["wins"] == 6


def test_knockout_makes_n_minus_one_comparisons_with_byes(client: TestClient) -> None:
    reply = client.post("/v1/judge", json=marked([1, 2, 3, 4, 5], grader="knockout")).json()
    stored = client.get(f"/v1/judgements/{reply['judgement_id']}").json()
    assert len(stored["comparisons"]) == 4  # N-1 for 5 answers, no draws
    assert sorted(c["round"] for c in stored["comparisons"]) == [1, 2, 2, 3]
    tallies = {a["id"]: a["comparison"] for a in reply["answers"]}
    assert sum(t["byes"] for t in tallies.values()) == 3  # 8 places, 5 answers
    assert scores(reply)["a4"] == 1.0  # won every round
    assert all(t["losses"] <= 1 for t in tallies.values())


def test_a_drawn_knockout_match_is_replayed_in_the_swapped_order(client: TestClient) -> None:
    reply = client.post("/v1/judge", json=marked([3, 3], grader="knockout")).json()
    stored = client.get(f"/v1/judgements/{reply['judgement_id']}").json()
    first, replay = stored["comparisons"]
    assert (replay["first"], replay["second"]) == (first["second"], first["first"])
    assert first["preference"] == replay["preference"] == 0.5
    # Still even: the answer placed higher goes on, and each is credited half the round.
    assert sorted(scores(reply).values()) == [0.5, 0.5]
    assert all(a["comparison"]["ties"] == 1 for a in reply["answers"])


@pytest.mark.parametrize("grader", MODES)
def test_a_failed_comparison_is_left_out_and_counted_never_zero(client: TestClient, grader: str) -> None:
    body = marked([5, 4, 3, 2], grader=grader)
    body["answers"][1]["text"] += f" {REFUSE_COMPARISONS}"
    before = metric_value(client.get("/metrics").text, "judge_comparisons_failed_total", grader=grader)
    reply = client.post("/v1/judge", json=body).json()
    refused = next(a for a in reply["answers"] if a["id"] == "a1")
    assert refused["status"] == "unscored" and refused["score"] is None
    assert "no comparison of this answer succeeded" in refused["error"]
    stored = client.get(f"/v1/judgements/{reply['judgement_id']}").json()
    failed = [c for c in stored["comparisons"] if c["verdict"] is None]
    assert failed and all("a1" in (c["first"], c["second"]) and c["error"] for c in failed)
    after = metric_value(client.get("/metrics").text, "judge_comparisons_failed_total", grader=grader)
    assert after - before == len(failed) == refused["comparison"]["failed"]
    if grader == "pairwise":  # the others are scored from the comparisons that succeeded
        assert all(a["status"] == "scored" for a in reply["answers"] if a["id"] != "a1")
        assert scores(reply)["a0"] == max(s for s in scores(reply).values() if s is not None)


@pytest.mark.parametrize("grader", MODES)
def test_an_engine_failing_every_comparison_fails_the_group(tmp_path: Path, grader: str) -> None:
    failing = FakeBackend(script=[JudgeBackendError("the engine is gone")] * 50)
    with make_client(tmp_path, failing) as client:
        wait_ready(client)
        response = client.post("/v1/judge", json=marked([5, 1, 3], grader=grader))
    assert response.status_code == 502 and response.json()["error"]["code"] == "judge_unavailable"


def test_the_graders_are_listed_and_fingerprints_follow_their_options(client: TestClient) -> None:
    kinds = {g["name"]: g["kind"] for g in client.get("/v1/graders").json()["items"]}
    assert kinds["pairwise"] == kinds["knockout"] == "comparison"

    def fingerprint(**extra: Any) -> str:
        return str(client.post("/v1/judge", json=marked([5, 1], **extra)).json()["grader_fingerprint"])

    pairwise = fingerprint(grader="pairwise")
    assert fingerprint(grader="pairwise", comparison={}) == pairwise  # the defaults
    assert fingerprint(grader="knockout") != pairwise
    assert fingerprint(grader="pairwise", comparison={"pairwise_score": "winrate"}) != pairwise
    assert fingerprint(grader="pairwise", comparison={"both_orders": False}) != pairwise
    assert fingerprint(grader="judge") != pairwise


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"decoding": "per_answer"}, "does not take decoding"),
        ({"orders": 2}, "does not take orders"),
        ({"comparison": {"max_pairs": 2}}, "takes at least 5 pairs"),
        (
            {
                "criteria": [
                    {
                        "name": "cites",
                        "description": "Cites the manual.",
                        "scale": "binary",
                        "kind": "essential",
                    }
                ]
            },
            "checklist items",
        ),
    ],
)
def test_what_comparison_grading_cannot_take_is_refused(
    client: TestClient, extra: dict[str, Any], message: str
) -> None:
    response = client.post("/v1/judge", json=marked([5, 1, 3, 2, 4], grader="pairwise", **extra))
    assert response.status_code == 422 and message in response.json()["error"]["message"]


def test_a_group_of_one_is_unscored_with_the_reason(client: TestClient) -> None:
    (answer,) = client.post("/v1/judge", json=marked([5], grader="pairwise")).json()["answers"]
    assert answer["score"] is None and "at least two answers" in answer["error"]


@pytest.mark.parametrize("grader", MODES)
def test_batch_blends_and_regrade_take_the_graders_by_name(client: TestClient, grader: str) -> None:
    batch = client.post(
        "/v1/judge/batch", json={"groups": [marked([5, 1, 3], grader=grader), marked([1, 5], grader=grader)]}
    ).json()["results"]
    assert [max(scores(r["judgement"]), key=lambda i: scores(r["judgement"])[i] or 0) for r in batch] == [
        "a0",
        "a1",
    ]
    blend = client.post(
        "/v1/judge",
        json=marked([5, 1], terms=[{"grader": grader, "weight": 0.5}, {"grader": "contains", "weight": 0.5}]),
    ).json()
    assert [t["grader"] for t in blend["answers"][0]["terms"]] == [grader, "contains"]
    assert blend["answers"][0]["comparison"]["wins"] >= 1

    judged = client.post(
        "/v1/judge", json=marked([1, 5, 2], run_id=f"re-{grader}", decoding="per_answer")
    ).json()
    regraded = client.post(
        "/v1/regrade", json={"judgement_ids": [judged["judgement_id"]], "grader": grader}
    ).json()["results"][0]
    assert regraded["error"] is None, regraded
    new = regraded["judgement"]
    assert new["grader"] == grader and new["regrade_of"] == judged["judgement_id"]
    assert max(scores(new), key=lambda i: scores(new)[i] or 0) == "a1"


@pytest.mark.parametrize("grader", MODES)
async def test_members_of_a_group_are_compared_together(tmp_path: Path, grader: str) -> None:
    fixed = {k: v for k, v in marked([5, 1, 3]).items() if k != "answers"}
    bodies = [
        {**fixed, "grader": grader, "group_key": f"m-{grader}", "group_size": 3, "answer": answer}
        for answer in marked([5, 1, 3])["answers"]
    ]
    async with serving(tmp_path, FakeBackend()) as (_, client):
        replies = [r.json() for r in await post_all(client, bodies)]
    assert len({r["judgement_id"] for r in replies}) == 1
    assert max(replies, key=lambda r: r["answer"]["score"])["answer"]["id"] == "a0"


def test_comparisons_ask_for_reasons_in_the_requested_language(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    client.post("/v1/judge", json=marked([5, 1], grader="pairwise", reason_language="de"))
    systems = [r.messages[0]["content"] for r in fake_backend.requests]
    assert len(systems) == 2 and all(s.endswith("Write every reason in German.") for s in systems)
