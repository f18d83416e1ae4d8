"""Attribution over HTTP, on the fake judge: with `attribution: "steps"` each mark names the steps of the
answer's trajectory it rests on and the first that went wrong, held by the schema to the steps the answer
has, checked again when read (a step out of range is retried, then that answer is unscored, never 0),
returned, stored and in the fingerprint; without it, prompts, schemas and replies are as before."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import STEP_OUT_OF_RANGE, WRONG_STEP, FakeBackend
from judge_service.client import step_weights
from judge_service.judging.llm.prompt import ATTRIBUTION_LINE
from tests.api.conftest import make_client, wait_ready
from tests.api.test_trajectories_api import agents, trajectory


def attributed_group(**extra: Any) -> dict[str, Any]:
    return agents(
        {"id": "t1", "messages": trajectory()},
        {"id": "t2", "messages": trajectory(result=f'{{"temp_c": 35}} {WRONG_STEP}')},
        {"id": "t3", "text": "Sunny, probably."},
        attribution="steps",
        **extra,
    )


def attributions(judged: dict[str, Any], answer_id: str) -> dict[str, Any]:
    answer = next(a for a in judged["answers"] if a["id"] == answer_id)
    return {name: mark["attribution"] for name, mark in answer["criteria"].items()}


def test_each_mark_names_its_steps_and_the_first_wrong_one(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    reply = client.post("/v1/judge", json=attributed_group(run_id="attribution"))
    assert reply.status_code == 200, reply.text
    judged = reply.json()
    criteria = ("correctness", "helpfulness", "tone", "format")
    marks = [m for a in judged["answers"] for m in a["criteria"].values()]
    assert all(m["expected_mark"] is not None for m in marks)  # located past the steps
    assert attributions(judged, "t1") == {name: {"steps": [3], "first_wrong_step": None} for name in criteria}
    assert set(map(str, attributions(judged, "t2").values())) == {
        str({"steps": [2, 3], "first_wrong_step": 2})
    }
    assert set(map(str, attributions(judged, "t3").values())) == {
        str({"steps": [], "first_wrong_step": None})
    }
    request = fake_backend.requests[-1]
    assert request.messages[0]["content"].endswith(ATTRIBUTION_LINE.format(8))
    # The schema holds each answer to its own steps: three for the trajectories, none for the text.
    criterion = request.json_schema["properties"]["t1"]["properties"]["correctness"]
    assert list(criterion["properties"]) == ["reason", "steps", "first_wrong_step", "mark"]
    step = {"type": "integer", "minimum": 1, "maximum": 3}
    assert criterion["properties"]["steps"]["items"] == step
    assert criterion["properties"]["first_wrong_step"] == {"anyOf": [step, {"type": "null"}]}
    text_answer = request.json_schema["properties"]["t3"]["properties"]["correctness"]["properties"]
    assert text_answer["steps"]["maxItems"] == 0 and text_answer["first_wrong_step"] == {"type": "null"}
    # Stored as returned: the judgement page and a regrade read them there.
    stored = client.get(f"/v1/judgements/{judged['judgement_id']}").json()
    assert attributions(stored, "t2") == attributions(judged, "t2")
    assert stored["request"]["attribution"] == "steps"


def test_without_attribution_prompts_schemas_and_replies_are_as_before(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    plain = attributed_group(seed=1)
    del plain["attribution"]
    reply = client.post("/v1/judge", json=plain)
    assert reply.status_code == 200, reply.text
    assert all(
        mark["attribution"] is None for a in reply.json()["answers"] for mark in a["criteria"].values()
    )
    request = fake_backend.requests[-1]
    assert "steps" not in request.messages[0]["content"]
    criterion = request.json_schema["properties"]["t1"]["properties"]["correctness"]
    assert list(criterion["properties"]) == ["reason", "mark"]
    with_steps = client.post("/v1/judge", json=attributed_group(seed=1)).json()
    assert with_steps["grader_fingerprint"] != reply.json()["grader_fingerprint"]  # another question asked
    assert fake_backend.requests[-1].messages[1] == request.messages[1]  # of the same group shown


def test_a_step_out_of_range_is_retried_then_leaves_that_answer_unscored(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    body = attributed_group()
    body["answers"][0]["messages"][2]["content"] = [{"type": "text", "text": f"21 C. {STEP_OUT_OF_RANGE}"}]
    reply = client.post("/v1/judge", json=body)
    assert reply.status_code == 200, reply.text
    judged = reply.json()
    t1 = next(a for a in judged["answers"] if a["id"] == "t1")
    assert t1["status"] == "unscored" and t1["score"] is None
    assert "names step 4; the answer has steps 1-3" in t1["error"]
    assert all(a["score"] is not None for a in judged["answers"] if a["id"] != "t1")
    assert judged["attempts"] == 3  # the first call and both retries (JUDGE_PARSE_RETRIES)
    assert judged["status"] == "partial"


def test_per_answer_decoding_gives_each_call_its_answers_steps(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    reply = client.post("/v1/judge", json=attributed_group(decoding="per_answer"))
    assert reply.status_code == 200, reply.text
    assert attributions(reply.json(), "t2")["correctness"] == {"steps": [2, 3], "first_wrong_step": 2}
    schemas = {r.answer_id: r.json_schema for r in fake_backend.requests[-3:]}
    assert schemas["t1"]["properties"]["tone"]["properties"]["steps"]["items"]["maximum"] == 3
    assert schemas["t3"]["properties"]["tone"]["properties"]["steps"]["maxItems"] == 0


def test_orders_keep_the_first_orders_attribution(client: TestClient) -> None:
    reply = client.post("/v1/judge", json=attributed_group(orders=2))
    assert reply.status_code == 200, reply.text
    assert attributions(reply.json(), "t2")["format"] == {"steps": [2, 3], "first_wrong_step": 2}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"answers": [{"id": "x", "text": "a"}, {"id": "y", "text": "b"}]}, "every answer is text"),
        ({"reasons": "none"}, "with reasons 'none' there are none"),
        ({"grader": "pairwise"}, "does not take attribution"),
        ({"grader": "exact", "reference": "21 C."}, "the rule graders name no steps"),
        ({"attribution": "turns"}, "Input should be 'steps'"),
    ],
)
def test_attribution_the_judge_cannot_give_is_a_clear_422(
    client: TestClient, change: dict[str, Any], message: str
) -> None:
    body = copy.deepcopy(attributed_group())
    body.update(change)
    reply = client.post("/v1/judge", json=body)
    assert reply.status_code == 422, reply.text
    assert message in reply.text


def test_step_weights_put_the_blame_from_the_first_wrong_step_on(client: TestClient) -> None:
    judged = client.post("/v1/judge", json=attributed_group()).json()
    scores = {a["id"]: a["score"] for a in judged["answers"]}
    mean = sum(scores.values()) / 3
    weights = step_weights(judged, {"t1": 3, "t2": 3, "t3": 1})
    for answer_id in ("t1", "t3"):  # no step named wrong: the advantage on every step
        assert weights[answer_id] == pytest.approx(
            [scores[answer_id] - mean] * (3 if answer_id == "t1" else 1)
        )
    advantage = scores["t2"] - mean
    expected = [0.0, advantage, advantage] if advantage < 0 else [advantage] * 3
    assert weights["t2"] == pytest.approx(expected)
    with pytest.raises(ValueError, match="the judge named step 3"):  # a count the reply contradicts
        step_weights(judged, {"t2": 2})
    with pytest.raises(ValueError, match="'t9'"):
        step_weights(judged, {"t9": 3})


def test_a_null_among_the_steps_is_an_output_problem_never_a_500(tmp_path: Path) -> None:
    """A judge without constrained decoding may write anything: [1, null] is retried, then unscored."""
    bad = {"reason": "r", "steps": [1, None], "first_wrong_step": None, "mark": 3}
    good = {"reason": "r", "steps": [], "first_wrong_step": None, "mark": 4}
    criteria = ("correctness", "helpfulness", "tone", "format")
    reply = json.dumps({"t1": dict.fromkeys(criteria, bad), "t3": dict.fromkeys(criteria, good)})
    backend = FakeBackend(script=[reply] * 3)
    body = attributed_group()
    body["answers"] = [body["answers"][0], body["answers"][2]]
    with make_client(tmp_path, backend) as client:
        wait_ready(client)
        judged = client.post("/v1/judge", json=body)
    assert judged.status_code == 200, judged.text
    t1 = next(a for a in judged.json()["answers"] if a["id"] == "t1")
    assert t1["score"] is None and "names step None" in t1["error"]
