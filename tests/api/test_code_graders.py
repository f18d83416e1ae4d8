"""Graders written as code, through the API: every signature, the task row's `item`, each way a grader
fails (unscored with what happened, never 0; the service healthy and the pool refilled), pinning by the
source's hash, explanation fields stored and shown, and the limits on `item`."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from judge_service.schemas import MAX_ITEM_BYTES
from tests.api.conftest import make_client, wait_ready

CODE_GRADERS = Path(__file__).resolve().parents[1] / "code_graders.py"


def _spec(name: str, function: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "target": f"tests.code_graders:{function}", **extra}


SPECS = [
    _spec("fact", "mentions_fact"),
    _spec("json-total", "json_total"),
    _spec("half", "async_half"),
    _spec("verl-match", "verl_match", signature="verl", score_range=[-1, 1]),
    _spec("shortest", "shortest_wins", signature="group"),
    _spec("by-id", "by_id", signature="group"),
    _spec("wrong-length", "wrong_length", signature="group"),
    _spec("raises", "raises"),
    _spec("hangs", "hangs", timeout_s=1),
    _spec("aborts", "aborts"),
    _spec("hogs", "hogs_memory", memory_mb=64),
    _spec("out-of-range", "out_of_range"),
    _spec("prints", "prints"),
]


@pytest.fixture(scope="module")
def code_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, FakeBackend]]:
    backend = FakeBackend()
    home = tmp_path_factory.mktemp("code")
    with make_client(home, backend, code_graders=json.dumps(SPECS), code_workers=2) as client:
        wait_ready(client)
        yield client, backend


def _group(texts: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "Which plan includes SSO?"}],
        "reference": "The Business plan includes SSO.",
        "answers": [{"id": f"a{i}", "text": text} for i, text in enumerate(texts)],
        **extra,
    }


def _judge(client: TestClient, texts: list[str], **extra: Any) -> dict[str, Any]:
    response = client.post("/v1/judge", json=_group(texts, **extra))
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _scores(body: dict[str, Any]) -> list[float | None]:
    return [answer["score"] for answer in body["answers"]]


def test_rft_signature_reads_the_item(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    body = _judge(client, ["Business has SSO.", "Starter."], grader="fact", item={"fact": "business"})
    assert _scores(body) == [1.0, 0.0]
    assert body["answers"][0]["terms"][0]["explanation"] == "returned 1"


def test_rft_sample_has_output_json(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    texts = ['{"total": 42}', '{"total": 41}', "total: 42"]
    assert _scores(_judge(client, texts, grader="json-total", item={"total": 42})) == [1.0, 0.0, 0.0]


def test_async_functions_run(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    assert _scores(_judge(client, ["x", "y"], grader="half")) == [0.5, 0.5]


def test_verl_signature_scales_its_range_and_keeps_explanation_fields(
    code_client: tuple[TestClient, FakeBackend],
) -> None:
    client, _ = code_client
    texts = ["The Business plan includes SSO.", "No idea."]
    body = _judge(client, texts, grader="verl-match", item={"data_source": "support"}, run_id="verl-run")
    assert _scores(body) == [1.0, 0.0]  # +1 and -1 of [-1, 1]
    term = body["answers"][1]["terms"][0]
    assert term["details"] == {"found": False, "data_source": "support"}
    assert term["explanation"] == "returned -1 of [-1, 1]"
    stored = client.get(f"/v1/judgements/{body['judgement_id']}").json()
    assert stored["answers"][1]["terms"][0]["details"] == {"found": False, "data_source": "support"}
    assert stored["request"]["item"] == {"data_source": "support"}
    page = client.get(f"/ui/judgements/{body['judgement_id']}").text
    assert "found" in page and "support" in page


def test_group_signature_sees_the_whole_group(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    assert _scores(_judge(client, ["a", "abc", "abcde"], grader="shortest")) == [1.0, 0.5, 0.0]
    assert _scores(_judge(client, ["a", "b"], grader="by-id")) == [0.25, 0.25]
    wrong = _judge(client, ["a", "b"], grader="wrong-length")
    assert _scores(wrong) == [None, None]
    assert "grader_invalid_result" in wrong["answers"][0]["error"]


def test_code_grader_blends_with_the_judge_and_the_judge_never_sees_the_item(
    code_client: tuple[TestClient, FakeBackend],
) -> None:
    client, backend = code_client
    backend.requests.clear()
    terms = [{"grader": "fact", "weight": 0.7}, {"grader": "judge", "weight": 0.3}]
    body = _judge(client, ["Business.", "Starter."], terms=terms, item={"fact": "zebra-business-42"})
    assert [t["grader"] for t in body["answers"][0]["terms"]] == ["fact", "judge"]
    assert body["answers"][0]["terms"][0]["score"] == 0.0  # the fact is not in the answer
    shown = json.dumps([request.messages for request in backend.requests])
    assert backend.requests and "zebra-business-42" not in shown


@pytest.mark.parametrize(
    ("grader", "text", "error"),
    [
        ("raises", "boom", "grader_error: ZeroDivisionError: no figures to divide"),
        ("hangs", "hang", "grader_timeout: the grader took longer than 1 s"),
        ("aborts", "abort", "grader_crashed: the grader's worker process died (SIGABRT)"),
        ("hogs", "hog", "grader_memory"),
        ("out-of-range", "x", "grader_invalid_result: returned 1.5, outside its score_range [0, 1]"),
    ],
)
def test_a_failing_grader_leaves_that_answer_unscored(
    code_client: tuple[TestClient, FakeBackend], grader: str, text: str, error: str
) -> None:
    client, _ = code_client
    replaced_before = _replaced(client)
    body = _judge(client, ["fine", text, "also fine"], grader=grader)
    failed = body["answers"][1]
    assert failed["status"] == "unscored" and failed["score"] is None
    assert error in failed["error"]
    if grader != "out-of-range":  # the answers around the failure are scored by the same grader
        assert _scores(body)[0] == 1.0 and _scores(body)[2] == 1.0
        assert body["status"] == "partial"
    if grader in ("hangs", "aborts"):  # the worker was killed with its process group and replaced
        assert _replaced(client) == replaced_before + 1
    assert client.get("/readyz").status_code == 200
    assert _scores(_judge(client, ["still works"], grader="fact", item={"fact": "works"})) == [1.0]


def test_what_a_grader_prints_does_not_break_the_protocol(
    code_client: tuple[TestClient, FakeBackend],
) -> None:
    client, _ = code_client
    assert _scores(_judge(client, ["a", "b"], grader="prints")) == [1.0, 1.0]


def test_graders_are_listed_with_their_source_hash(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    items = {item["name"]: item for item in client.get("/v1/graders").json()["items"]}
    fact = items["fact"]
    assert fact["kind"] == "code" and fact["target"] == "tests.code_graders:mentions_fact"
    assert fact["source_sha256"] == hashlib.sha256(CODE_GRADERS.read_bytes()).hexdigest()
    assert fact["signature"] == "rft" and fact["runs_model"] is False
    assert items["judge"]["kind"] == "judge" and items["similarity"]["kind"] == "rule"
    assert items["judge+numbers"]["kind"] == "blend"
    body = _judge(client, ["Business"], grader="fact", item={"fact": "business"})
    assert body["grader_fingerprint"] == fact["fingerprint"]


def test_member_requests_carry_the_item(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    member: dict[str, Any] = {
        "group_key": "members-item",
        "group_size": 1,
        "conversation": [{"role": "user", "content": "Which plan?"}],
        "reference": "Business",
        "grader": "fact",
        "item": {"fact": "business"},
        "answer": {"id": "m0", "text": "Business"},
    }
    response = client.post("/v1/judge/member", json=member)
    assert response.status_code == 200, response.text
    assert response.json()["answer"]["score"] == 1.0


def test_regrade_replays_the_item(code_client: tuple[TestClient, FakeBackend]) -> None:
    client, _ = code_client
    first = _judge(client, ["Business has SSO.", "Starter."], grader="fact", item={"fact": "business"})
    response = client.post("/v1/regrade", json={"judgement_ids": [first["judgement_id"]], "grader": "fact"})
    assert response.status_code == 200, response.text
    again = response.json()["results"][0]["judgement"]
    assert _scores(again) == [1.0, 0.0]


def _replaced(client: TestClient) -> float:
    found = re.search(r"^judge_code_workers_replaced_total (\S+)$", client.get("/metrics").text, re.MULTILINE)
    assert found is not None
    return float(found.group(1))


# --------------------------------------------------------------------------- the item's limits


def test_item_limits(client: TestClient) -> None:
    too_big = {"text": "x" * MAX_ITEM_BYTES}
    response = client.post("/v1/judge", json=_group(["a"], grader="exact", item=too_big))
    assert response.status_code == 422 and "keep only the fields graders read" in response.text
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(20):
        node["n"] = {}
        node = node["n"]
    response = client.post("/v1/judge", json=_group(["a"], grader="exact", item=deep))
    assert response.status_code == 422 and "flatten the item" in response.text
    response = client.post("/v1/judge", json=_group(["a"], grader="exact", item=["not", "an", "object"]))
    assert response.status_code == 422 and "item" in response.text


# --------------------------------------------------------------------------- pinning and start-up


def _module_grader(tmp_path: Path, body: str) -> None:
    (tmp_path / "pinned_grader.py").write_text(
        "import os\n\ndef grade(sample, item):\n"
        "    if 'abort' in sample['output_text']:\n        os.abort()\n" + body
    )


def test_changed_source_is_a_changed_grader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = json.dumps([{"name": "pinned", "target": "pinned_grader:grade"}])
    _module_grader(tmp_path, "    return 1.0\n")
    fingerprints = []
    for version, body in enumerate(["    return 1.0\n", "    return 0.5\n"]):
        _module_grader(tmp_path, body)
        with make_client(tmp_path / str(version), FakeBackend(), code_graders=spec, code_workers=1) as client:
            wait_ready(client)
            (pinned,) = [g for g in client.get("/v1/graders").json()["items"] if g["name"] == "pinned"]
            fingerprints.append(pinned["fingerprint"])
            assert _scores(_judge(client, ["a"], grader="pinned")) == [1.0 if version == 0 else 0.5]
            if version == 1:
                # The source changes under a running service: a replaced worker refuses the new code.
                _module_grader(tmp_path, "    return 0.0\n")
                crashed = _judge(client, ["abort"], grader="pinned")
                assert "grader_crashed" in crashed["answers"][0]["error"]
                changed = _judge(client, ["a"], grader="pinned")
                assert "grader_changed" in changed["answers"][0]["error"]
    assert fingerprints[0] != fingerprints[1]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('[{"name": "x", "target": "tests.code_graders:no_such_function"}]', "has no function"),
        ('[{"name": "x", "target": "no_such_module_here:f"}]', "No module named"),
        ('[{"name": "x", "target": "not a target"}]', "target"),
        ('[{"name": "x", "target": "a:b"}, {"name": "x", "target": "a:c"}]', "repeated: x"),
        ('[{"name": "exact", "target": "tests.code_graders:trivial"}]', "two graders are named 'exact'"),
        ("/no/such/file.json", "neither a JSON list nor a readable file"),
    ],
)
def test_a_grader_that_cannot_load_stops_the_start(tmp_path: Path, setting: str, message: str) -> None:
    with (
        pytest.raises(ValueError, match=re.escape(message)),
        make_client(tmp_path, FakeBackend(), code_graders=setting, code_workers=1),
    ):
        pass
