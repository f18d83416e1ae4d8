"""Endpoint credentials are never printed (judge_service/redaction.py): not in the service's log, httpx's
own `HTTP Request:` line of every health check included, for the judge endpoint and a jury's; not in what a
start refused for a bad setting prints; and public /readyz says neither the endpoint nor what it answered,
which only a key with the read scope sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from judge_service.api.middleware.keys import Scope
from judge_service.app import create_app
from judge_service.backends.factory import build_backend
from judge_service.config import Settings
from judge_service.metrics import JudgeMetrics
from tests.api.test_scopes import SCOPED, bearer, keys_document
from tests.scaleout.processes import FakeEngine
from tests.service_process import REPO, ServiceProcess, group

PASSWORD = "pw-judge-7f3a9c"
API_KEY = "sk-judge-51d0e2b8"
JUROR_PASSWORD = "pw-juror-c41d77"
JUROR_KEY = "sk-juror-9b2e61f0"
SECRETS = (PASSWORD, API_KEY, JUROR_PASSWORD, JUROR_KEY)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeEngine]:
    started = FakeEngine(tmp_path_factory.mktemp("secrets-engine"), "judge", latency_s=0.0)
    try:
        yield started
    finally:
        started.stop()


def with_credentials(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1)


def test_no_log_line_shows_an_endpoint_credential(tmp_path: Path, engine: FakeEngine) -> None:
    juror = {
        "name": "second",
        "base_url": with_credentials(f"{engine.url}/v1", "juror", JUROR_PASSWORD),
        "model": "fake-judge",
        "api_key": JUROR_KEY,
    }
    service = ServiceProcess(
        tmp_path,
        backend="openai",
        openai_base_url=with_credentials(f"{engine.url}/v1", "judge", PASSWORD),
        openai_api_key=API_KEY,
        served_model_name="fake-judge",
        jury=json.dumps([juror]),
        health_interval_s=0.1,
        access_log=True,
    )
    with service:
        response = httpx.post(f"{service.url}/v1/judge", json=group(2), timeout=30)
        assert response.status_code == 200, response.text
        deadline = time.monotonic() + 20
        while service.log().count("/v1/models") < 6:  # a few health checks of both endpoints
            assert time.monotonic() < deadline, service.tail()
            time.sleep(0.1)
    log = service.log()
    assert "HTTP Request: GET http://***@127.0.0.1" in log  # httpx's own line, its credentials masked
    assert "HTTP Request: POST http://***@127.0.0.1" in log
    assert not [secret for secret in SECRETS if secret in log], log[-3000:]


def refused_start(tmp_path: Path, **settings: str) -> str:
    """What `judge-service serve` prints when it refuses to start with these settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env |= {"JUDGE_BACKEND": "fake", "JUDGE_HOME_DIR": str(tmp_path), "JUDGE_PORT": "0"}
    env |= {f"JUDGE_{name.upper()}": value for name, value in settings.items()}
    done = subprocess.run(
        [sys.executable, "-m", "judge_service", "serve"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_bad_database_url_is_refused_without_its_password(tmp_path: Path) -> None:
    # Short: pydantic's own text cuts the middle out of a long value, and would hide part of it.
    printed = refused_start(tmp_path, database_url=f"postgresql+psycopg://u:{PASSWORD}@db/j")
    assert "JUDGE_DATABASE_URL" in printed and "scheme 'postgresql+psycopg'" in printed
    assert PASSWORD not in printed


# The credential last: pydantic's own text quotes the entry, cut in its middle when long.
@pytest.mark.parametrize(
    ("entry", "says", "secret"),
    [
        ({"weight": 2, "api_key": JUROR_KEY}, "give base_url and model", JUROR_KEY),
        ({"engine": "local", "base_url": f"http://j:{JUROR_PASSWORD}@h"}, "no base_url", JUROR_PASSWORD),
    ],
)
def test_a_bad_jury_entry_is_refused_without_its_credentials(
    tmp_path: Path, entry: dict[str, Any], says: str, secret: str
) -> None:
    printed = refused_start(tmp_path, jury=json.dumps([{"name": "a", **entry}]))
    assert "JUDGE_JURY" in printed and says in printed
    assert secret not in printed


def test_readyz_says_why_only_to_a_key_with_the_read_scope(tmp_path: Path) -> None:
    async def refusing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "no such key for organisation acme-internal"}})

    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(keys_document()))
    endpoint = with_credentials("http://judge.internal:8000/v1", "judge", PASSWORD)
    for keyed in (False, True):
        config = Settings(
            backend="openai",
            openai_base_url=endpoint,
            served_model_name="m",
            home_dir=tmp_path,
            health_interval_s=0.05,
            api_keys_file=keys_file if keyed else None,
        )
        backend = build_backend(config, JudgeMetrics(), transport=httpx.MockTransport(refusing))
        with TestClient(create_app(config, backend=backend)) as client:
            deadline = time.monotonic() + 10
            while client.app.state.readiness.state != "unavailable":  # type: ignore[attr-defined]
                assert time.monotonic() < deadline
                time.sleep(0.01)
            public = client.get("/readyz")
            assert public.status_code == 503
            assert public.json() == {"status": "unavailable", "backend": "openai"}
            if not keyed:  # nobody may see why: the log says it
                continue
            for other in (SCOPED[Scope.JUDGE], SCOPED[Scope.LABEL], "not-a-key"):
                assert client.get("/readyz", headers=bearer(other)).json() == public.json()
            shown = client.get("/readyz", headers=bearer(SCOPED[Scope.READ]))
            assert shown.status_code == 503 and shown.json()["status"] == "unavailable"
            why = shown.json()["error"]
            assert "http://judge.internal:8000/v1/models" in why and "acme-internal" in why
            assert PASSWORD not in why
