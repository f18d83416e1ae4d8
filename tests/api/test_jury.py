"""Juries (JUDGE_JURY, the `jury` grader) with OpenAI-compatible fake judges started here, each its own
process serving a model name of its own, scripted by the answers' texts to give the marks a test asks of
it: aggregates against hand-computed values, escalation calling the third judge only on disagreement, a
judge down, every judge down, readiness, fingerprints, regrade and what is stored."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import MARK_BY_MODEL, FakeBackend
from tests.api.conftest import make_client, wait_ready
from tests.api.test_member import member, post_all, serving
from tests.scaleout.processes import FakeEngine, free_port
from tests.service_process import metric_value

JUDGES = ("judge-a", "judge-b", "judge-c")


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FakeEngine]]:
    workdir = tmp_path_factory.mktemp("jury-engines")
    started: dict[str, FakeEngine] = {}
    try:
        for model in JUDGES:
            started[model] = FakeEngine(workdir, model, latency_s=0.0, model=model)
        yield started
    finally:
        for engine in started.values():
            engine.stop()


def endpoint(name: str, engines: dict[str, FakeEngine], model: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "base_url": f"{engines[model].url}/v1", "model": model, **extra}


def jury_client(tmp_path: Path, judges: list[dict[str, Any]], **settings: Any) -> TestClient:
    return make_client(
        tmp_path,
        FakeBackend(),
        jury=json.dumps(judges),
        openai_transport_retries=0,
        health_interval_s=0.1,
        **settings,
    )


@pytest.fixture
def jury(tmp_path: Path, engines: dict[str, FakeEngine]) -> Iterator[TestClient]:
    judges = [endpoint(n, engines, m) for n, m in zip("abc", JUDGES, strict=True)]
    with jury_client(tmp_path, judges) as client:
        wait_ready(client)
        yield client


def marked(*marks: int) -> str:
    """An answer that asks judge-a, judge-b and judge-c for these marks (in that order)."""
    return " ".join(MARK_BY_MODEL.format(model, m) for model, m in zip(JUDGES, marks, strict=True))


def group(*answers: str, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How many clips did Natalia sell?"}],
        "reference": "Natalia sold 72 clips.",
        "answers": [{"id": f"a{i}", "text": f"72 clips. {text}"} for i, text in enumerate(answers)],
        "grader": "jury",
        **extra,
    }


def judged(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def by_id(reply: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in reply["answers"]}


def requests_served(engines: dict[str, FakeEngine]) -> dict[str, int]:
    return {model: int(str(engine.stats()["requests"])) for model, engine in engines.items()}


# Marks 5, 3, 1 are scores 1.0, 0.5, 0.0; marks 4, 4, 2 are 0.75, 0.75, 0.25.
SPLIT, LEANING = marked(5, 3, 1), marked(4, 4, 2)


@pytest.mark.parametrize(
    ("aggregate", "expected"),
    [
        ({"aggregate": "mean"}, {"a0": 0.5, "a1": 1.75 / 3}),
        ({"aggregate": "median"}, {"a0": 0.5, "a1": 0.75}),
        ({"aggregate": "min"}, {"a0": 0.0, "a1": 0.25}),
        # mean - std (population): a0 sqrt(0.5/3); a1 sqrt(((1/6)^2 * 2 + (1/3)^2) / 3)
        (
            {"aggregate": "mean_minus_std"},
            {"a0": 0.5 - math.sqrt(0.5 / 3), "a1": 1.75 / 3 - math.sqrt(1 / 18)},
        ),
        (
            {"aggregate": "mean_minus_std", "std_factor": 0.5},
            {"a0": 0.5 - 0.5 * math.sqrt(0.5 / 3), "a1": 1.75 / 3 - 0.5 * math.sqrt(1 / 18)},
        ),
    ],
)
def test_each_aggregate_matches_the_hand_computed_score(
    jury: TestClient, aggregate: dict[str, Any], expected: dict[str, float]
) -> None:
    reply = judged(jury, group(SPLIT, LEANING, jury=aggregate))
    answers = by_id(reply)
    for answer_id, score in expected.items():
        assert answers[answer_id]["score"] == pytest.approx(score, abs=1e-6), answer_id
    a0 = answers["a0"]["jury"]
    assert a0["scores"] == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert a0["spread"] == 4.0 and a0["missing"] == {}
    assert answers["a1"]["jury"]["spread"] == pytest.approx(2.0)
    assert reply["judge_model"] == "jury(a=judge-a, b=judge-b, c=judge-c)"
    # Per criterion the judges' scores are aggregated the same way, with the mark nearest the score.
    correctness = answers["a0"]["criteria"]["correctness"]
    assert correctness["score"] == pytest.approx(expected["a0"], abs=1e-6)
    assert correctness["mark"] == round(1 + 4 * expected["a0"])
    assert correctness["reason"].startswith("a: ")


def test_escalation_calls_the_third_judge_only_where_the_first_two_disagree(
    jury: TestClient, engines: dict[str, FakeEngine]
) -> None:
    escalate = {"judges": ["a", "b", "c"], "escalate": 1.0}
    text = jury.get("/metrics").text
    before = {p: metric_value(text, "judge_jury_groups_total", path=p) for p in ("agreed", "escalated")}
    served = requests_served(engines)

    agreed = judged(jury, group(marked(4, 4, 1), marked(2, 3, 5), jury=escalate))  # a, b at most 1 apart
    after_agreed = requests_served(engines)
    assert after_agreed["judge-c"] == served["judge-c"], "judge c was called for a group a and b agree on"
    assert after_agreed["judge-a"] > served["judge-a"] and after_agreed["judge-b"] > served["judge-b"]
    a1 = by_id(agreed)["a1"]
    assert a1["score"] == pytest.approx((0.25 + 0.5) / 2)  # c's 5 never counted
    assert a1["jury"]["missing"] == {"c": "not called: the first judges agreed"}
    records = {r["name"]: r for r in jury.get(f"/v1/judgements/{agreed['judgement_id']}").json()["jury"]}
    assert records["c"]["called"] is False and records["a"]["called"] and not records["a"]["escalation"]

    disputed = judged(jury, group(marked(4, 4, 1), marked(5, 2, 1), jury=escalate))  # a1: 3 marks apart
    assert requests_served(engines)["judge-c"] > after_agreed["judge-c"]
    a1 = by_id(disputed)["a1"]
    assert a1["jury"]["scores"] == {"a": 1.0, "b": 0.25, "c": 0.0}
    assert a1["score"] == pytest.approx(1.25 / 3)
    records = {r["name"]: r for r in jury.get(f"/v1/judgements/{disputed['judgement_id']}").json()["jury"]}
    assert records["c"]["called"] and records["c"]["escalation"] and records["c"]["raw_outputs"]

    text = jury.get("/metrics").text
    after = {p: metric_value(text, "judge_jury_groups_total", path=p) for p in ("agreed", "escalated")}
    assert after == {"agreed": before["agreed"] + 1, "escalated": before["escalated"] + 1}


def test_a_judge_that_is_down_leaves_the_verdict_to_the_others(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    down = {"name": "down", "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "nobody"}
    judges = [endpoint("a", engines, "judge-a"), down, endpoint("b", engines, "judge-b")]
    with jury_client(tmp_path, judges) as client:
        wait_ready(client)
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and ready["jury"]["judges"]["down"] == "unavailable"
        reply = judged(client, group(marked(5, 3, 1)))
        answer = reply["answers"][0]
        assert answer["status"] == "scored" and answer["score"] == pytest.approx(0.75)
        assert set(answer["jury"]["scores"]) == {"a", "b"}
        assert "down" in answer["jury"]["missing"] and answer["jury"]["missing"]["down"]
        stored = client.get(f"/v1/judgements/{reply['judgement_id']}").json()
        record = next(r for r in stored["jury"] if r["name"] == "down")
        assert record["called"] and record["error"] and record["raw_outputs"] == []
        text = client.get("/metrics").text
        assert metric_value(text, "judge_jury_failures_total", judge="down") == 1
        assert metric_value(text, "judge_jury_calls_total", judge="a") == 1
        assert metric_value(text, "judge_jury_judge_ready", judge="down") == 0
        assert metric_value(text, "judge_jury_judge_ready", judge="a") == 1


def test_every_judge_down_leaves_the_answers_unscored_never_zero(tmp_path: Path) -> None:
    judges = [
        {"name": n, "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "nobody"} for n in ("x", "y")
    ]
    with jury_client(tmp_path, judges) as client:
        wait_ready_for_main(client)
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "jury_unavailable"
        reply = judged(client, group("72", "71"))
        assert reply["status"] == "failed"
        for answer in reply["answers"]:
            assert answer["status"] == "unscored" and answer["score"] is None
            assert "0 of the 1 judges needed scored it" in answer["error"]
            assert set(answer["jury"]["missing"]) == {"x", "y"}


def wait_ready_for_main(client: TestClient) -> None:
    """Until the service's own judge is ready (the jury's endpoints never will be)."""
    for _ in range(500):
        if client.get("/readyz").json()["status"] != "loading":
            return
    raise TimeoutError("the service's judge never became ready")


def test_a_local_judge_sits_beside_an_endpoint(tmp_path: Path, engines: dict[str, FakeEngine]) -> None:
    judges = [{"name": "own", "engine": "local", "temperature": 0.5}, endpoint("a", engines, "judge-a")]
    with jury_client(tmp_path, judges) as client:
        wait_ready(client)
        reply = judged(client, group(marked(5, 1, 1) + " [fake judge fake-judge: mark 3]"))
        answer = reply["answers"][0]
        assert answer["jury"]["scores"] == {"own": 0.5, "a": 1.0}
        assert answer["score"] == pytest.approx(0.75)
        assert reply["judge_model"] == "jury(own=fake-judge, a=judge-a)"
        # The local judge's temperature is its own, so its fingerprint part differs from the service's.
        info = {g["name"]: g for g in client.get("/v1/graders").json()["items"]}
        assert info["jury"]["kind"] == "jury" and info["jury"]["runs_model"]


def test_fingerprints_cover_every_judge_and_the_aggregate(
    tmp_path: Path, jury: TestClient, engines: dict[str, FakeEngine]
) -> None:
    first = judged(jury, group("72"))["grader_fingerprint"]
    assert judged(jury, group("72 again"))["grader_fingerprint"] == first
    assert judged(jury, group("72", jury={"aggregate": "min"}))["grader_fingerprint"] != first
    assert judged(jury, group("72", jury={"judges": ["a", "b"]}))["grader_fingerprint"] != first
    other_model = [
        endpoint("a", engines, "judge-a"),
        endpoint("b", engines, "judge-b"),
        endpoint("c", engines, "judge-a"),
    ]
    with jury_client(tmp_path / "other", other_model) as client:
        wait_ready(client)
        assert judged(client, group("72"))["grader_fingerprint"] != first
    weighted = [
        endpoint("a", engines, "judge-a"),
        endpoint("b", engines, "judge-b"),
        endpoint("c", engines, "judge-c", weight=2),
    ]
    with jury_client(tmp_path / "weighted", weighted) as client:
        wait_ready(client)
        assert judged(client, group("72"))["grader_fingerprint"] != first


def test_a_regrade_judges_with_the_jury_and_keeps_both(jury: TestClient) -> None:
    original = judged(jury, group(SPLIT, grader="judge"))
    response = jury.post(
        "/v1/regrade",
        json={"judgement_ids": [original["judgement_id"]], "grader": "jury", "jury": {"aggregate": "min"}},
    )
    assert response.status_code == 200, response.text
    regraded = response.json()["results"][0]["judgement"]
    assert regraded["regrade_of"] == original["judgement_id"]
    assert regraded["answers"][0]["score"] == 0.0 and regraded["answers"][0]["jury"]["aggregate"] == "min"
    assert regraded["grader_fingerprint"] != original["grader_fingerprint"]
    assert jury.get(f"/v1/judgements/{original['judgement_id']}").json()["answers"][0]["jury"] is None


def test_a_batch_and_a_blend_take_the_jury(jury: TestClient) -> None:
    response = jury.post(
        "/v1/judge/batch",
        json={"groups": [group(SPLIT), group(LEANING, grader="judge"), {**group(SPLIT), "grader": "nope"}]},
    )
    results = response.json()["results"]
    assert results[0]["judgement"]["answers"][0]["score"] == pytest.approx(0.5)
    assert results[1]["judgement"]["answers"][0]["jury"] is None
    assert results[2]["error"]["code"] == "invalid_group"
    blend = judged(
        jury,
        {
            **group(SPLIT),
            "grader": "judge",
            "terms": [{"grader": "jury", "weight": 0.5}, {"grader": "numbers", "weight": 0.5}],
        },
    )
    assert blend["answers"][0]["score"] == pytest.approx(0.75)  # 0.5 x 0.5 + 0.5 x 1.0 (72 is right)


@pytest.mark.parametrize(
    ("jury_options", "says"),
    [
        ({"judges": ["a", "zed"]}, "unknown jury judge(s) 'zed'"),
        ({"judges": ["a", "b"], "escalate": 1}, "name a third judge"),
        ({"judges": ["a", "a"]}, "each jury judge must be unique"),
        ({"aggregate": "max"}, "aggregate"),
    ],
)
def test_bad_jury_options_are_refused_with_what_to_fix(
    jury: TestClient, jury_options: dict[str, Any], says: str
) -> None:
    response = jury.post("/v1/judge", json=group("72", jury=jury_options))
    assert response.status_code == 422, response.text
    assert says in response.text


def test_without_a_jury_the_grader_is_not_offered(client: TestClient) -> None:
    response = client.post("/v1/judge", json=group("72"))
    assert response.status_code == 422 and "unknown grader 'jury'" in response.text
    assert "jury" not in client.get("/readyz").json()


async def test_members_of_a_group_are_judged_by_the_jury_once(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    judges = [endpoint(n, engines, m) for n, m in zip("abc", JUDGES, strict=True)]
    served = requests_served(engines)
    async with serving(tmp_path, jury=json.dumps(judges), openai_transport_retries=0) as (_, client):
        bodies = [member(f"a{i}", size=2, grader="jury", jury={"aggregate": "min"}) for i in range(2)]
        bodies[0]["answer"]["text"] += " " + SPLIT
        replies = [r.json() for r in await post_all(client, bodies)]
        assert len({r["judgement_id"] for r in replies}) == 1
        assert replies[0]["answer"]["score"] == 0.0 and replies[0]["answer"]["jury"]["spread"] == 4.0
    assert all(requests_served(engines)[m] == served[m] + 1 for m in JUDGES)  # one call each, one group


def test_a_bad_jury_setting_stops_the_start_with_what_to_fix(tmp_path: Path) -> None:
    client = make_client(tmp_path, FakeBackend(), jury='[{"name": "a"}]')
    with pytest.raises(ValueError, match=r"(?s)JUDGE_JURY: .*give base_url and model"), client:
        pass


def test_jury_options_with_another_grader_are_refused(jury: TestClient) -> None:
    response = jury.post("/v1/judge", json=group("72", grader="judge", jury={"aggregate": "min"}))
    assert response.status_code == 422 and "set grader to 'jury'" in response.text


def test_a_quorum_above_the_jury_stops_the_start(tmp_path: Path, engines: dict[str, FakeEngine]) -> None:
    client = jury_client(tmp_path, [endpoint("a", engines, "judge-a")], jury_quorum=2)
    with pytest.raises(ValueError, match="JUDGE_JURY_QUORUM is 2"), client:
        pass


def test_a_quorum_of_two_leaves_an_answer_one_judge_scored_unscored(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    down = {"name": "down", "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "nobody"}
    judges = [endpoint("a", engines, "judge-a"), down, endpoint("b", engines, "judge-b")]
    with jury_client(tmp_path, judges, jury_quorum=2) as client:
        wait_ready(client)
        scored = judged(client, group(marked(5, 3, 1)))["answers"][0]
        assert scored["status"] == "scored" and set(scored["jury"]["scores"]) == {"a", "b"}
        alone = judged(client, group(marked(5, 3, 1), jury={"judges": ["a", "down"]}))["answers"][0]
        assert alone["status"] == "unscored" and alone["score"] is None
        assert alone["error"].startswith("1 of the 2 judges needed scored it (down: ")


def test_a_cascade_calls_the_jury_only_for_a_group_its_rule_leaves_flat(
    jury: TestClient, engines: dict[str, FakeEngine]
) -> None:
    ties = {"rule": "numbers", "judge": "ties"}
    served = requests_served(engines)
    apart = group("", "", cascade=ties)
    apart["answers"] = [{"id": "a0", "text": "72 clips."}, {"id": "a1", "text": "50 clips."}]
    decided = judged(jury, apart)  # the rule tells them apart
    assert decided["cascade"] == "rule_only" and requests_served(engines) == served
    flat = judged(jury, group(SPLIT, LEANING, cascade=ties))  # both say 72: flat
    assert flat["cascade"] == "judged"
    answers = by_id(flat)
    assert answers["a0"]["scored_by"] == "judge" and answers["a0"]["score"] == pytest.approx(0.5)
    assert answers["a0"]["jury"]["scores"] == {"a": 1.0, "b": 0.5, "c": 0.0}
