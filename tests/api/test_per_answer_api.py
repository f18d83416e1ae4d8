"""Per-answer decoding and expected marks through the HTTP API, on the fake judge."""

from __future__ import annotations

import re
from pathlib import Path

from judge_service.backends.base import GenerationRequest
from judge_service.backends.fake import LEAVE_ONE_UNSCORED, FakeBackend
from judge_service.config import PACKAGED_PROMPTS
from judge_service.judging.llm.expected import expected_marks
from judge_service.judging.llm.parser import reason_words_pattern
from tests.api.conftest import group, make_client, wait_ready
from tests.api.test_orders_api import FirstPlaceBias, shown_ids


def judged(tmp_path: Path, backend: FakeBackend, body: dict, **settings: object) -> dict:
    with make_client(tmp_path, backend, **settings) as client:
        wait_ready(client)
        response = client.post("/v1/judge", json=body)
        assert response.status_code == 200, response.text
        stored = client.get(f"/v1/judgements/{response.json()['judgement_id']}").json()
        return {"response": response.json(), "stored": stored}


def test_per_answer_judges_the_group_with_one_call_per_answer_over_one_shared_prefix(tmp_path: Path) -> None:
    backend = FakeBackend()
    result = judged(tmp_path, backend, group(6, decoding="per_answer"))
    body = result["response"]
    calls = backend.requests
    assert len(calls) == 6 and body["usage"]["judge_calls"] == 6
    shown = body["answer_orders"][0]
    assert [c.answer_id for c in calls] == shown  # one call per answer, in the shown order
    # Every call shows the whole group in the same order and the same system message...
    assert all(shown_ids(c) == shown for c in calls)
    assert len({c.messages[0]["content"] for c in calls}) == 1
    # ... and the user messages are byte-identical up to the closing instruction naming the answer.
    users = [c.messages[1]["content"] for c in calls]
    shared = users[0][: users[0].rindex("Grade answer ") + len("Grade answer ")]
    assert shared.count("<answer id=") == 6
    for call, user in zip(calls, users, strict=True):
        assert user.startswith(shared)
        assert user[len(shared) :].startswith(f"{call.answer_id} only")
    # Each reply is one answer's criteria object, constrained by a schema without answer ids.
    assert all(
        set(c.json_schema["required"]) == {"correctness", "helpfulness", "tone", "format"} for c in calls
    )
    assert [a["status"] for a in body["answers"]] == ["scored"] * 6
    assert len(result["stored"]["raw_outputs"]) == 6
    assert body["prompt_version"].startswith("judge_group@")


def test_marks_come_back_by_answer_id(tmp_path: Path) -> None:
    """A judge that gives 5 to the answer shown first: only that answer scores 1.0, whichever it is."""
    body = judged(tmp_path, FirstPlaceBias(), group(4, decoding="per_answer"))["response"]
    first = body["answer_orders"][0][0]
    assert {a["id"]: a["score"] for a in body["answers"]} == {
        f"a{i}": 1.0 if f"a{i}" == first else 0.0 for i in range(4)
    }


def test_an_answer_its_call_cannot_mark_is_unscored_with_a_reason_after_its_own_retries(
    tmp_path: Path,
) -> None:
    backend = FakeBackend()
    body_in = group(4, decoding="per_answer")
    body_in["conversation"][0]["content"] += " " + LEAVE_ONE_UNSCORED
    body = judged(tmp_path, backend, body_in, parse_retries=2)["response"]
    first = body["answer_orders"][0][0]
    by_id = {a["id"]: a for a in body["answers"]}
    assert by_id[first]["status"] == "unscored" and by_id[first]["score"] is None
    assert "criterion 'correctness' is missing" in by_id[first]["error"]
    assert all(a["status"] == "scored" for i, a in by_id.items() if i != first)
    assert body["status"] == "partial"
    # Only the failing answer's call was retried: 4 calls + 2 retries.
    assert body["usage"]["judge_calls"] == 6
    assert sum(1 for c in backend.requests if c.answer_id == first) == 3


def test_a_failed_engine_call_fails_the_whole_group(tmp_path: Path) -> None:
    from judge_service.errors import JudgeBackendError

    backend = FakeBackend(
        script=['{"correctness": {"reason": "Ok.", "mark": 3}}', JudgeBackendError("engine down")]
    )
    with make_client(tmp_path, backend) as client:
        wait_ready(client)
        response = client.post("/v1/judge", json=group(2, decoding="per_answer", criteria=[CRITERION]))
    assert response.status_code == 502 and response.json()["error"]["code"] == "judge_unavailable"


CRITERION = {"name": "correctness", "description": "Right?", "mark_1": "wrong", "mark_5": "right"}


def test_orders_combine_as_for_the_group_decoding(tmp_path: Path) -> None:
    backend = FirstPlaceBias()
    body = judged(tmp_path, backend, group(4, decoding="per_answer", orders=2))["response"]
    assert len(backend.requests) == 8 and len(body["answer_orders"]) == 2
    firsts = {order[0] for order in body["answer_orders"]}
    for answer in body["answers"]:
        # Shown first in one of the two orders: 5 there and 1 in the other, a mean score of 0.5.
        assert answer["score"] == (0.5 if answer["id"] in firsts else 0.0)
    assert body["order_sensitivity"] > 0


def test_the_decoding_is_part_of_the_fingerprint_and_the_setting_is_the_default(tmp_path: Path) -> None:
    grouped = judged(tmp_path / "g", FakeBackend(), group(3))["response"]
    by_setting = judged(tmp_path / "s", FakeBackend(), group(3), decoding="per_answer")["response"]
    by_request = judged(tmp_path / "r", FakeBackend(), group(3, decoding="per_answer"))["response"]
    assert by_setting["grader_fingerprint"] == by_request["grader_fingerprint"]
    assert grouped["grader_fingerprint"] != by_request["grader_fingerprint"]
    assert grouped["prompt_version"] != by_request["prompt_version"]
    overridden = judged(tmp_path / "o", FakeBackend(), group(3, decoding="group"), decoding="per_answer")
    assert overridden["response"]["grader_fingerprint"] == grouped["grader_fingerprint"]


def test_a_template_folder_without_per_answer_parts_refuses_the_decoding_with_422(tmp_path: Path) -> None:
    folder = tmp_path / "prompts" / "mine"
    folder.mkdir(parents=True)
    for part in ("system.j2", "user.j2"):
        (folder / part).write_text((PACKAGED_PROMPTS / "judge_group" / part).read_text())
    with make_client(
        tmp_path, FakeBackend(), prompts_dir=tmp_path / "prompts", prompt_template="mine"
    ) as client:
        wait_ready(client)
        assert client.post("/v1/judge", json=group(2)).status_code == 200
        refused = client.post("/v1/judge", json=group(2, decoding="per_answer"))
    assert refused.status_code == 422
    assert "per_answer_system.j2" in refused.json()["error"]["message"]


def test_reason_words_put_the_pattern_in_every_calls_schema(tmp_path: Path) -> None:
    backend = FakeBackend()
    judged(tmp_path, backend, group(2, decoding="per_answer"), reason_words=True, reason_max_chars=60)
    for call in backend.requests:
        reason = call.json_schema["properties"]["tone"]["properties"]["reason"]
        assert reason["pattern"] == reason_words_pattern(60)


def expected_score(criteria: dict) -> float:
    return sum((c["expected_mark"] - 1) / 4 for c in criteria.values()) / len(criteria)


def test_expected_marks_are_returned_beside_the_marks_and_score_when_asked(tmp_path: Path) -> None:
    for decoding in ("group", "per_answer"):
        backend = FakeBackend()
        body = judged(tmp_path / decoding, backend, group(4, decoding=decoding, score_from="expected"))[
            "response"
        ]
        assert all(c.top_logprobs == 10 for c in backend.requests)
        for answer in body["answers"]:
            for mark in answer["criteria"].values():
                assert (
                    abs(mark["expected_mark"] - mark["mark"]) <= 0.5 and mark["expected_mark"] != mark["mark"]
                )
                assert mark["score"] == (mark["expected_mark"] - 1) / 4
            assert answer["score"] == round(expected_score(answer["criteria"]), 6)
            assert answer["explanation"].endswith("from expected marks")
    default = judged(tmp_path / "mark", FakeBackend(), group(2))["response"]
    for answer in default["answers"]:  # integer marks score by default; expected marks still returned
        assert all(
            m["score"] == (m["mark"] - 1) / 4 and m["expected_mark"] for m in answer["criteria"].values()
        )


class NoLogprobs(FakeBackend):
    """A judge endpoint that ignores the request for log-probabilities."""

    async def generate(self, request: GenerationRequest):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        return replace(await super().generate(request), logprobs=None)


def test_without_log_probabilities_the_integer_marks_stand_in_and_the_answer_says_so(tmp_path: Path) -> None:
    body = judged(tmp_path, NoLogprobs(), group(3, decoding="per_answer", score_from="expected"))["response"]
    assert body["status"] == "ok"
    for answer in body["answers"]:
        assert answer["status"] == "scored"
        assert all(
            m["expected_mark"] is None and m["score"] == (m["mark"] - 1) / 4
            for m in answer["criteria"].values()
        )
        assert "no log-probabilities" in answer["explanation"]


def test_expected_marks_off_asks_for_no_log_probabilities(tmp_path: Path) -> None:
    backend = FakeBackend()
    body = judged(tmp_path, backend, group(2, score_from="expected"), mark_logprobs=0)["response"]
    assert all(c.top_logprobs == 0 for c in backend.requests)
    assert all("JUDGE_MARK_LOGPROBS=0" in a["explanation"] for a in body["answers"])


def test_the_fake_judges_expected_marks_match_its_log_probabilities(tmp_path: Path) -> None:
    """The scoring reads the same positions expected.py locates (a cross-check of the fixture itself)."""
    backend = FakeBackend()
    body = judged(tmp_path, backend, group(2, decoding="per_answer"))["response"]
    raw = {c.answer_id: backend.unscripted_reply(c) for c in backend.requests}
    from judge_service.backends.fake import fake_logprobs

    for answer in body["answers"]:
        found = expected_marks(fake_logprobs(raw[answer["id"]]))
        for name, mark in answer["criteria"].items():
            assert mark["expected_mark"] == round(found[(name,)], 6)
    assert re.fullmatch(r"judge_group@[0-9a-f]{12}", body["prompt_version"])
