"""Inline python through the service, as an attacker with a trainer's key tried it: the `judge` scope no
longer runs code (403 naming the `python` scope), and code that a `python` key runs sees none of the
service's secrets, files or processes, and cannot change what a configured grader scores for others."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from tests.api.conftest import make_client, wait_ready

# The route needs `judge`; python source needs `python` or `admin` besides.
KEYS = {"trainer": ["judge"], "coder": ["judge", "python"], "ops": ["judge", "admin"], "dash": ["read"]}
RUN = "/v1/fine_tuning/alpha/graders/run"
VALIDATE = "/v1/fine_tuning/alpha/graders/validate"
SECRET = "service-secret-never-shown-0123"


def _key(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer key-of-{name}"}


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    entries = [
        {"name": name, "sha256": hashlib.sha256(f"key-of-{name}".encode()).hexdigest(), "scopes": scopes}
        for name, scopes in KEYS.items()
    ]
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({"keys": entries}))
    monkeypatch.setenv("JUDGE_SESSION_SECRET_SEEN_BY_GRADERS", SECRET)
    settings: dict[str, Any] = {
        "api_keys": SECRET,
        "api_keys_file": keys_file,
        "allow_inline_python": True,
        "code_workers": 1,
        "code_graders": json.dumps([{"name": "operator", "target": "tests.code_graders:trivial"}]),
    }
    with make_client(tmp_path, FakeBackend(), **settings) as client:
        wait_ready(client)
        yield client


def _python(source: str) -> dict[str, Any]:
    return {"grader": {"type": "python", "name": "p", "source": source}, "model_sample": "x"}


STEAL = "import os\ndef grade(sample, item):\n    raise RuntimeError(repr(dict(os.environ)))\n"


@pytest.mark.parametrize("route", [RUN, VALIDATE])
def test_a_trainer_key_cannot_send_code(service: TestClient, route: str) -> None:
    body = _python(STEAL) if route == RUN else {"grader": _python(STEAL)["grader"]}
    for name in ("trainer", "dash"):
        response = service.post(route, json=body, headers=_key(name))
        assert response.status_code == 403, response.text
        error = response.json()["error"]
        if name == "trainer":
            assert error["details"] == {"scope": "python", "key": "trainer"}
            assert "python" in error["message"]


def test_a_python_key_runs_code_that_sees_no_secret(service: TestClient) -> None:
    for name in ("coder", "ops"):
        response = service.post(RUN, json=_python(STEAL), headers=_key(name))
        assert response.status_code == 200, response.text
        body = response.json()
        details = body["metadata"]["errors"]["python_grader_runtime_error_details"]
        assert "PYTHONPATH" in details  # the grader did run and print its environment
        assert SECRET not in response.text and "JUDGE_" not in details


def test_inline_code_cannot_change_a_configured_grader(service: TestClient) -> None:
    patch = (
        "import gc\n"
        "def grade(sample, item):\n"
        "    for thing in gc.get_objects():\n"
        "        if type(thing).__name__ == 'Loaded':\n"
        "            thing.function = lambda s, i: 0.0\n"
        "    return 1.0\n"
    )
    assert service.post(RUN, json=_python(patch), headers=_key("coder")).status_code == 200
    group = {
        "conversation": [{"role": "user", "content": "q"}],
        "reference": "r",
        "answers": [{"id": "a", "text": "an answer"}],
        "grader": "operator",
    }
    judged = service.post(
        "/v1/judge", json=group, headers=_key("ops") | {"Authorization": f"Bearer {SECRET}"}
    )
    assert judged.status_code == 200, judged.text
    assert judged.json()["answers"][0]["score"] == 1.0
