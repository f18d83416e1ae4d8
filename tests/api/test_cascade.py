"""Cascades (`cascade` in the request) on the fake judge: the rule grader scores first, and the judge is
called only where the rule leaves the group flat ("ties") or for the answers that reach the threshold
("verify"), with the calls it saved counted, each answer saying what scored it, and a judge failure still
an unscored answer, never a 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import LEAVE_ONE_UNSCORED, MARK_ANSWER, FakeBackend
from tests.api.conftest import make_client, wait_ready
from tests.api.test_member import post_all, serving
from tests.service_process import metric_value

TIES = {"rule": "numbers", "judge": "ties"}
VERIFY = {"rule": "numbers", "judge": "verify", "threshold": 1.0}


def group(texts: list[str], reference: str = "Natalia sold 72 clips.", **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How many clips did Natalia sell?"}],
        "reference": reference,
        "answers": [{"id": f"a{i}", "text": text} for i, text in enumerate(texts)],
        **extra,
    }


def mark(text: str, n: int) -> str:
    return f"{text} {MARK_ANSWER.format(n)}"


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def cascading(tmp_path: Path, backend: FakeBackend) -> Any:
    with make_client(tmp_path, backend) as client:
        wait_ready(client)
        yield client


def paths(client: TestClient) -> dict[str, float]:
    text = client.get("/metrics").text
    return {p: metric_value(text, "judge_cascade_groups_total", path=p) for p in ("rule_only", "judged")}


def scored(reply: dict[str, Any]) -> dict[str, tuple[float | None, str | None]]:
    return {a["id"]: (a["score"], a["scored_by"]) for a in reply["answers"]}


def test_a_group_the_rule_tells_apart_makes_no_judge_call(
    cascading: TestClient, backend: FakeBackend
) -> None:
    before = paths(cascading)
    reply = cascading.post("/v1/judge", json=group(["It is 72.", "It is 9."], cascade=TIES)).json()
    assert backend.requests == [] and reply["usage"]["judge_calls"] == 0
    assert reply["cascade"] == "rule_only" and reply["judge_model"] is None
    assert scored(reply) == {"a0": (1.0, "rule"), "a1": (0.0, "rule")}
    assert paths(cascading)["rule_only"] - before["rule_only"] == 1


def test_a_flat_group_is_decided_by_the_judge(cascading: TestClient, backend: FakeBackend) -> None:
    before = paths(cascading)
    body = group([mark("It is 72.", 5), mark("72, by guessing.", 2)], cascade=TIES)
    reply = cascading.post("/v1/judge", json=body).json()
    assert len(backend.requests) == 1 and reply["cascade"] == "judged"
    assert scored(reply) == {"a0": (1.0, "judge"), "a1": (0.25, "judge")}
    assert paths(cascading)["judged"] - before["judged"] == 1
    # A rule that scores nothing (no figure in the reference) leaves the group flat too.
    none = cascading.post("/v1/judge", json=group(["Yes.", "No."], reference="Yes.", cascade=TIES)).json()
    assert none["cascade"] == "judged" and all(a["scored_by"] == "judge" for a in none["answers"])


def test_verify_multiplies_only_the_answers_over_the_threshold(cascading: TestClient) -> None:
    body = group([mark("It is 72.", 5), mark("So 72.", 3), "It is 70.", "It is 9."], cascade=VERIFY)
    reply = cascading.post("/v1/judge", json=body).json()
    assert reply["cascade"] == "judged"
    # a0, a1 reach the figure: 1.0 x the judge's correctness; a2 (0.5 within 5%) and a3 keep the rule's.
    assert scored(reply) == {
        "a0": (1.0, "rule+judge"),
        "a1": (0.5, "rule+judge"),
        "a2": (0.5, "rule"),
        "a3": (0.0, "rule"),
    }
    assert "x judge's correctness" in reply["answers"][1]["explanation"]
    nobody = cascading.post("/v1/judge", json=group(["It is 70.", "It is 9."], cascade=VERIFY)).json()
    assert nobody["cascade"] == "rule_only" and nobody["usage"]["judge_calls"] == 0


@pytest.mark.parametrize("cascade", [TIES, VERIFY])
def test_a_judge_failure_in_a_cascade_is_unscored_never_zero(
    cascading: TestClient, cascade: dict[str, Any]
) -> None:
    body = group(["It is 72.", "So 72."], cascade=cascade)
    body["conversation"][0]["content"] += f" {LEAVE_ONE_UNSCORED}"
    reply = cascading.post("/v1/judge", json=body).json()
    unscored = [a for a in reply["answers"] if a["status"] == "unscored"]
    assert len(unscored) == 1 and unscored[0]["score"] is None and unscored[0]["error"]
    assert reply["status"] == "partial"


def test_the_fingerprint_covers_the_cascade(cascading: TestClient) -> None:
    def fingerprint(**extra: Any) -> str:
        return str(
            cascading.post("/v1/judge", json=group(["It is 72.", "It is 9."], **extra)).json()[
                "grader_fingerprint"
            ]
        )

    plain = fingerprint()
    ties = fingerprint(cascade=TIES)
    assert (
        len({plain, ties, fingerprint(cascade=VERIFY), fingerprint(cascade={**VERIFY, "threshold": 0.5})})
        == 4
    )
    assert fingerprint(cascade=TIES) == ties
    assert fingerprint(cascade={**TIES, "rule": "similarity"}) != ties


def test_batch_and_regrade_take_a_cascade(cascading: TestClient, backend: FakeBackend) -> None:
    groups = [
        group(["It is 72.", "It is 9."], cascade=TIES),
        group([mark("It is 72.", 4), mark("72, by guessing.", 1)], cascade=TIES),
    ]
    results = cascading.post("/v1/judge/batch", json={"groups": groups}).json()["results"]
    assert [r["judgement"]["cascade"] for r in results] == ["rule_only", "judged"]
    judged = cascading.post("/v1/judge", json=group([mark("It is 72.", 5), mark("It is 9.", 5)])).json()
    calls = len(backend.requests)
    regraded = cascading.post(
        "/v1/regrade", json={"judgement_ids": [judged["judgement_id"]], "cascade": TIES}
    ).json()["results"][0]["judgement"]
    assert regraded["cascade"] == "rule_only" and len(backend.requests) == calls  # the rule decided
    assert scored(regraded) == {"a0": (1.0, "rule"), "a1": (0.0, "rule")}


def test_a_cascade_rule_must_be_a_rule_grader(cascading: TestClient) -> None:
    response = cascading.post("/v1/judge", json=group(["72"], cascade={"rule": "judge", "judge": "ties"}))
    assert response.status_code == 422 and "is not a rule grader" in response.json()["error"]["message"]


async def test_members_of_a_group_go_through_the_cascade_together(tmp_path: Path) -> None:
    fixed = {k: v for k, v in group([]).items() if k != "answers"}
    bodies = [
        {
            **fixed,
            "cascade": TIES,
            "group_key": "m-cascade",
            "group_size": 2,
            "answer": {"id": f"a{i}", "text": t},
        }
        for i, t in enumerate(["It is 72.", "It is 9."])
    ]
    backend = FakeBackend()
    async with serving(tmp_path, backend) as (_, client):
        replies = [r.json() for r in await post_all(client, bodies)]
    assert {r["answer"]["scored_by"] for r in replies} == {"rule"} and backend.requests == []
    assert sorted(r["answer"]["score"] for r in replies) == [0.0, 1.0]
