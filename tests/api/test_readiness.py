"""Readiness follows the judge backend (judge_service/readiness.py): health checks after start, a backend
that stops answering and comes back, and one that dies for good, which stops the server."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.base import BackendHealth
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
from judge_service.errors import JudgeBackendError, StoreUnavailableError
from judge_service.store.sqlite import SqliteJudgementStore
from tests.api.conftest import group, wait_ready
from tests.service_process import metric_value

READ_KEY = "readiness-key-0123456789"


def until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the condition never held")
        time.sleep(0.01)


def app_client(
    tmp_path: Path, backend: FakeBackend, on_fatal: Callable[[], None] | None = None
) -> TestClient:
    settings = Settings(backend="fake", home_dir=tmp_path, health_interval_s=0.02, dead_engine_exit_s=0.3)
    return TestClient(create_app(settings, backend=backend, on_fatal=on_fatal))


def engine_ready(client: TestClient) -> float:
    return metric_value(client.get("/metrics").text, "judge_engine_ready")


def test_an_endpoint_that_stops_answering_is_unavailable_until_it_answers_again(tmp_path: Path) -> None:
    backend = FakeBackend()
    with app_client(tmp_path, backend) as client:
        wait_ready(client)
        assert engine_ready(client) == 1
        backend.health = BackendHealth(ok=False, error="http://judge/v1/models: ConnectError: refused")
        until(lambda: client.get("/readyz").status_code == 503)
        # Why is for a key with the read scope (test_secrets.py); this service has no keys.
        assert client.get("/readyz").json() == {"status": "unavailable", "backend": "fake"}
        readiness = client.app.state.readiness  # type: ignore[attr-defined]
        assert readiness.error == "http://judge/v1/models: ConnectError: refused"
        assert engine_ready(client) == 0
        # Groups are still sent: the endpoint decides (here it answers).
        assert client.post("/v1/judge", json=group(2)).status_code == 200
        backend.health = None
        until(lambda: client.get("/readyz").status_code == 200)
        assert engine_ready(client) == 1


def test_a_dead_engine_fails_readiness_refuses_groups_then_stops_the_server(tmp_path: Path) -> None:
    backend = FakeBackend()
    stopped = threading.Event()
    with app_client(tmp_path, backend, on_fatal=stopped.set) as client:
        wait_ready(client)
        backend.health = BackendHealth(ok=False, fatal=True, error="the vLLM engine died: EngineDeadError")
        until(lambda: client.get("/readyz").status_code == 503)
        died_at = time.monotonic()
        body = client.get("/readyz").json()
        assert body == {"status": "failed", "backend": "fake"}  # why: in the log, and for a read key
        assert engine_ready(client) == 0
        refused = client.post("/v1/judge", json=group(2))
        assert refused.status_code == 503 and "the vLLM engine died" in refused.json()["error"]["message"]
        assert not stopped.is_set()  # probes and scrapes get dead_engine_exit_s to see it
        assert stopped.wait(timeout=5)
        assert time.monotonic() - died_at >= 0.2
        # Final: a later healthy answer does not bring it back.
        backend.health = None
        time.sleep(0.1)
        assert client.get("/readyz").json()["status"] == "failed"


class LateEndpoint(FakeBackend):
    """A judge endpoint that is not up for its first `refusals` starts (a router waiting for engines)."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals

    async def start(self) -> None:
        if self.refusals:
            self.refusals -= 1
            raise JudgeBackendError("GET http://router/v1/models failed: HTTP 503")
        await super().start()


def test_a_judge_endpoint_not_up_yet_is_asked_again_until_it_is(tmp_path: Path) -> None:
    backend = LateEndpoint(refusals=5)
    with app_client(tmp_path, backend) as client:
        first = client.get("/readyz")
        assert first.status_code == 503 and first.json()["status"] in ("loading", "unavailable")
        until(lambda: client.get("/readyz").status_code == 200)
        assert backend.refusals == 0
        assert client.post("/v1/judge", json=group(2)).status_code == 200


def test_a_start_that_fails_otherwise_is_reported_failed_with_its_error(tmp_path: Path) -> None:
    class Broken(FakeBackend):
        async def start(self) -> None:
            raise RuntimeError("the model folder is unreadable")

    with app_client(tmp_path, Broken()) as client:
        until(lambda: client.get("/readyz").json()["status"] == "failed")
        assert "model folder is unreadable" in client.app.state.readiness.error  # type: ignore[attr-defined]


class StoreAway(SqliteJudgementStore):
    """A database that stops answering (`mode` "refuses": an error at once; "hangs": no answer)."""

    mode: str | None = None

    async def ping(self) -> None:
        if self.mode == "refuses":
            raise StoreUnavailableError("the judgement database could not be used (disk I/O error)")
        if self.mode == "hangs":
            await asyncio.sleep(60)
        await super().ping()


def test_readiness_asks_the_store_only_when_told_to(tmp_path: Path, postgres_url: str) -> None:
    store = StoreAway(tmp_path / "j.sqlite3")
    required = Settings(
        backend="fake",
        home_dir=tmp_path,
        ready_requires_store=True,
        ready_store_timeout_s=0.3,
        api_keys=READ_KEY,
    )
    why = {"Authorization": f"Bearer {READ_KEY}"}  # the error is shown to a key with the read scope
    with TestClient(create_app(required, backend=FakeBackend(), store=store)) as client:
        wait_ready(client)
        store.mode = "refuses"
        assert client.get("/readyz").json() == {"status": "store_unavailable", "backend": "fake"}
        refused = client.get("/readyz", headers=why)
        assert refused.status_code == 503
        assert refused.json() == {
            "status": "store_unavailable",
            "backend": "fake",
            "error": "the judgement database could not be used (disk I/O error)",
        }
        store.mode = "hangs"
        hung = client.get("/readyz", headers=why)
        assert hung.status_code == 503 and "did not answer within 0.3 s" in hung.json()["error"]
        store.mode = None
        assert client.get("/readyz").status_code == 200
    default = StoreAway(tmp_path / "k.sqlite3")
    with TestClient(
        create_app(Settings(backend="fake", home_dir=tmp_path), backend=FakeBackend(), store=default)
    ) as client:
        wait_ready(client)
        default.mode = "refuses"
        assert client.get("/readyz").status_code == 200  # off by default: the judge decides readiness
    on_postgres = Settings(
        backend="fake",
        home_dir=tmp_path,
        database_url=postgres_url,
        migrate_on_start=True,
        ready_requires_store=True,
    )
    with TestClient(create_app(on_postgres, backend=FakeBackend())) as client:
        wait_ready(client)
        assert client.get("/readyz").json() == {"status": "ready", "backend": "fake"}
