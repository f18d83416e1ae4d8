"""Property-based API tests from the service's own OpenAPI description (schemathesis, in-process ASGI).

Every operation gets generated valid and invalid requests; whatever they contain, the service must
never answer 5xx, and each answer must be a documented status with a body matching its schema.
Bounded and derandomized so it stays fast and repeatable in CI; raise SCHEMATHESIS_MAX_EXAMPLES
locally to explore more.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings

MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


# Built at import: schemathesis parametrizes from a schema object (its from_fixture loader does not work
# with the installed pytest). The app's lifespan runs in schemathesis' own event loop thread.
_HOME = Path(tempfile.mkdtemp(prefix="judge-schemathesis-"))
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(Settings(backend="fake", home_dir=_HOME), backend=FakeBackend())
)


@pytest.fixture(scope="module", autouse=True)
def _close_app() -> Iterator[None]:
    yield
    shutdown_lifespans()  # schemathesis keeps the app's lifespan open until told (closes the store)
    shutil.rmtree(_HOME, ignore_errors=True)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors_and_responses_match_the_spec(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)


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
