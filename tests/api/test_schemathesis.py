"""Property-based API tests from the service's own OpenAPI description (schemathesis, in-process ASGI).

Every operation gets generated valid and invalid requests; whatever they contain, the service must
never answer 5xx, and each answer must be a documented status with a body matching its schema. Also with
API keys on (every case carrying the key, so the routes behind it are reached), and a budget of valid
groups for the judge route that must mostly be judged (200), so the success path is fuzzed and not only
validation. A generated Idempotency-Key that is well-formed is made unique per case: repeated across
cases it only produced 409s. Bounded and derandomized so it stays fast and repeatable in CI; raise
SCHEMATHESIS_MAX_EXAMPLES (and set SCHEMATHESIS_SEED) for a longer run by hand.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend, fake_thinking_profile
from judge_service.backends.thinking_profile import ThinkingProfile
from judge_service.config import Settings

MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"))
SEED = int(os.environ.get("SCHEMATHESIS_SEED", "0"))
API_KEY = "fuzz-key"
# Generated data is slow to build for the nested judge bodies; other health checks stay on.
SLOW_OK = [HealthCheck.too_slow, HealthCheck.filter_too_much]
_KEY = re.compile(r"^[!-~]{1,255}$")
_unique = itertools.count()
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


# Built at import: schemathesis parametrizes from a schema object (its from_fixture loader does not work
# with the installed pytest). The app's lifespan runs in schemathesis' own event loop thread.
_HOME = Path(tempfile.mkdtemp(prefix="judge-schemathesis-"))
# Member groups that never fill are answered at a short deadline, not after a minute.
_SETTINGS = {"backend": "fake", "member_deadline_s": 0.2}
# A judge that can think, so generated `thinking` and `reasoning_effort` values reach it.
_THINKING = fake_thinking_profile(ThinkingProfile(switch="toggle", parser="qwen3"))
schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_app(Settings(home_dir=_HOME / "open", **_SETTINGS), backend=FakeBackend(thinking=_THINKING)),
)
schema_with_keys = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_app(Settings(home_dir=_HOME / "keys", api_keys=API_KEY, **_SETTINGS), backend=FakeBackend()),
    headers={"Authorization": f"Bearer {API_KEY}"},  # the description itself is behind the key
)


def _prepare(case: schemathesis.Case) -> None:
    """A well-formed generated Idempotency-Key becomes unique to this case (a malformed one stays: 422
    expected), and a member's own deadline is cut to a moment, so that a group that never fills is
    answered at once instead of after up to an hour."""
    body = case.body
    if (
        case.path == "/v1/judge/member"
        and isinstance(body, dict)
        and isinstance(body.get("deadline_s"), float | int)
    ):
        body["deadline_s"] = min(body["deadline_s"], 0.2)
    headers = case.headers or {}
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and _KEY.match(key):
        headers["Idempotency-Key"] = f"fuzz-{next(_unique)}"


@pytest.fixture(scope="module", autouse=True)
def _close_app() -> Iterator[None]:
    yield
    shutdown_lifespans()  # schemathesis keeps the app's lifespan open until told (closes the store)
    shutil.rmtree(_HOME, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=not SEED, suppress_health_check=SLOW_OK)
@seed(SEED)
def test_no_server_errors_and_responses_match_the_spec(case: schemathesis.Case) -> None:
    _prepare(case)
    case.call_and_validate(checks=CHECKS)


@schema_with_keys.parametrize()
@settings(
    max_examples=max(5, MAX_EXAMPLES // 3), deadline=None, derandomize=not SEED, suppress_health_check=SLOW_OK
)
@seed(SEED)
def test_with_api_keys_on_no_server_errors_either(case: schemathesis.Case) -> None:
    _prepare(case)
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {API_KEY}"}
    case.call_and_validate(checks=CHECKS)


def _known_graders(body: object) -> None:
    """Generated grader names (random text) replaced by registered ones, so that the bodies reach the
    graders instead of stopping at the name; an unknown name's 422 has tests of its own."""
    if not isinstance(body, dict):
        return
    names = GRADER_NAMES if body.get("reference") else REFERENCE_FREE_GRADER_NAMES
    if isinstance(body.get("grader"), str):
        body["grader"] = names[len(body["grader"]) % len(names)]
    for index, term in enumerate(body.get("terms") or []):
        if isinstance(term, dict) and isinstance(term.get("grader"), str):
            term["grader"] = names[index % len(names)]
    body.pop("jury", None)  # options of the jury grader, which is not among the names


GRADER_NAMES = ["judge", "similarity", "numbers", "exact", "contains", "json", "label"]
REFERENCE_FREE_GRADER_NAMES = ["judge", "json"]


def _tool_turns_answer_calls(body: object) -> None:
    """What the description cannot state about trajectories made true: a tool turn answers a call made
    before it (one that answers none becomes a user turn), and an answer's trajectory has an assistant
    turn and no second text; a tool turn answering no call has tests of its own."""
    if not isinstance(body, dict):
        return
    made = _answer_earlier_calls(body.get("conversation") or [], set())
    for answer in body.get("answers") or []:
        if isinstance(answer, dict) and isinstance(answer.get("messages"), list):
            _answer_earlier_calls(answer["messages"], set(made))
            answer.pop("text", None)
            answer["messages"].append({"role": "assistant", "content": "done"})


def _answer_earlier_calls(messages: list[object], made: set[str]) -> set[str]:
    for message in messages:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                call["id"] = f"call-{next(_unique)}"
                made.add(call["id"])
        if message.get("role") == "tool":
            if made:
                message["tool_call_id"] = sorted(made)[0]
            else:
                message.update(role="user")
                message.pop("tool_call_id", None)
                message.pop("name", None)
    return made


def test_valid_groups_are_mostly_judged() -> None:
    """Schema-valid bodies for POST /v1/judge (positive mode), grader names made ones that exist: rules
    the schema cannot state (answer ids unique, a term's grader named twice) refuse some, but a good
    share must reach the graders and come back 200; what the schema cannot state about grader names
    and trajectories is made true first."""
    outcomes: Counter[int] = Counter()
    judge = schema["/v1/judge"]["POST"]

    @given(case=judge.as_strategy(generation_mode=schemathesis.GenerationMode.POSITIVE))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=not SEED, suppress_health_check=SLOW_OK)
    @seed(SEED)
    def judged(case: schemathesis.Case) -> None:
        _prepare(case)
        _known_graders(case.body)
        _tool_turns_answer_calls(case.body)
        response = case.call_and_validate(checks=CHECKS)
        outcomes[response.status_code] += 1

    judged()
    assert set(outcomes) <= {200, 409, 422}, outcomes
    assert outcomes[200] >= sum(outcomes.values()) // 3, outcomes


# --------------------------------------------------------------------------- what it found, pinned


def test_body_that_is_not_utf8_is_422_not_an_undocumented_400(client: TestClient) -> None:
    response = client.post(
        "/v1/judge", content=b'{"x": "\xff\xfe"}', headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and "UTF-8" in error["message"]


def test_metrics_is_documented_as_plain_text(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "text/plain" in spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert client.get("/metrics").headers["content-type"].startswith("text/plain")
