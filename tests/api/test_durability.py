"""Crashes and shutdowns lose nothing that was acknowledged.

- SIGKILL mid-load: every judgement answered with 200 is found after a restart on the same database.
- SIGTERM: the listener stays open while draining (503 shutting_down, /readyz draining); groups in
  flight finish (200) before the process exits, cleanly.
- In-process: the lifespan's drain waits for requests in flight before closing the store, refuses
  new ones with 503 shutting_down meanwhile, and is bounded by JUDGE_DRAIN_TIMEOUT_S.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
from judge_service.errors import StoreUnavailableError
from judge_service.schemas import StoredJudgement
from judge_service.store.base import IdempotencyKey
from judge_service.store.sqlite import SqliteJudgementStore
from tests.api.conftest import wait_ready
from tests.service_process import ServiceProcess, group, metric_value

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def processes() -> Iterator[list[ServiceProcess]]:
    started: list[ServiceProcess] = []
    yield started
    for proc in started:
        proc.stop()


# --------------------------------------------------------------------------- SIGKILL


def test_sigkill_mid_load_loses_no_acknowledged_judgement(
    tmp_path: Path, processes: list[ServiceProcess]
) -> None:
    db = tmp_path / "judgements.sqlite3"
    first = ServiceProcess(tmp_path, db_path=db, fake_latency_s=0.05, max_groups_in_flight=8)
    processes.append(first.start())
    acked: dict[str, dict[str, object]] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def load(worker: int) -> int:
        failures = 0
        with httpx.Client(base_url=first.url, timeout=5) as client:
            for i in range(10_000):
                if stop.is_set():
                    break
                try:
                    response = client.post("/v1/judge", json=group(3, group_key=f"w{worker}-{i}"))
                except httpx.HTTPError:
                    failures += 1  # the kill: connection reset or refused
                    time.sleep(0.01)
                    continue
                if response.status_code == 200:
                    body = response.json()
                    with lock:
                        acked[body["judgement_id"]] = body
        return failures

    with ThreadPoolExecutor(max_workers=6) as pool:
        workers = [pool.submit(load, w) for w in range(6)]
        deadline = time.monotonic() + 30
        while len(acked) < 40 and time.monotonic() < deadline:
            time.sleep(0.02)
        first.signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
        time.sleep(0.2)  # requests in flight at the kill fail now, and are not acknowledged
        stop.set()
        failures = sum(w.result() for w in workers)
    assert len(acked) >= 40, "the load never got going"
    assert failures >= 1, "the kill did not happen mid-load"

    second = ServiceProcess(tmp_path, db_path=db)
    processes.append(second.start())
    with httpx.Client(base_url=second.url, timeout=10) as client:
        for judgement_id, body in acked.items():
            response = client.get(f"/v1/judgements/{judgement_id}")
            assert response.status_code == 200, (judgement_id, response.text)
            stored = response.json()
            assert stored["answers"] == body["answers"]
            assert stored["group_key"] == body["group_key"]


# --------------------------------------------------------------------------- SIGTERM


def test_sigterm_drains_with_the_listener_open_then_exits_cleanly(
    tmp_path: Path, processes: list[ServiceProcess]
) -> None:
    """After SIGTERM, while groups are in flight: the port still answers, new requests get 503
    shutting_down with Retry-After, /readyz says draining; the groups in flight finish with 200, then the
    process exits. (Without the drain, uvicorn closes the listener at once: the probes are refused.)"""
    db = tmp_path / "judgements.sqlite3"
    service = ServiceProcess(tmp_path, db_path=db, fake_latency_s=2.0, drain_timeout_s=20)
    processes.append(service.start())
    n = 4

    def one(i: int) -> httpx.Response:
        with httpx.Client(base_url=service.url, timeout=20) as client:
            return client.post("/v1/judge", json=group(2, group_key=f"t{i}"))

    probes: list[tuple[int, str | None, dict[str, object]]] = []
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(one, i) for i in range(n)]
        with httpx.Client(base_url=service.url, timeout=5) as probe:
            deadline = time.monotonic() + 10
            while metric_value(probe.get("/metrics").text, "judge_groups_in_flight") < n:
                assert time.monotonic() < deadline, "the groups never got in flight"
                time.sleep(0.02)
            service.signal(signal.SIGTERM)
            signalled = time.monotonic()
            while probe.get("/readyz").json()["status"] != "draining":  # the next tick of the server
                assert time.monotonic() < signalled + 0.5, "the drain did not begin"
                time.sleep(0.01)
            while time.monotonic() < signalled + 1.2:  # well before the groups' 2 s are up
                refused = probe.post(
                    "/v1/judge", json=group(2, group_key="late"), headers={"Connection": "close"}
                )
                ready = probe.get("/readyz")
                probes.append((refused.status_code, refused.headers.get("retry-after"), ready.json()))
                time.sleep(0.1)
        responses = [f.result() for f in futures]

    assert len(probes) >= 5
    assert all(p == (503, "1", {"status": "draining", "backend": "fake"}) for p in probes), probes
    assert [r.status_code for r in responses] == [200] * n, [r.text for r in responses]
    # uvicorn re-raises the signal after its graceful shutdown, so the status is 0 or "killed by TERM".
    assert service.wait(15) in (0, -signal.SIGTERM)
    log = service.log()
    assert f"draining: waiting up to 20 s for {n} request(s) in flight" in log, log
    assert "Application shutdown complete" in log and "Finished server process" in log, log
    assert "Traceback" not in log and "ERROR" not in log, log

    restarted = ServiceProcess(tmp_path, db_path=db)
    processes.append(restarted.start())
    with httpx.Client(base_url=restarted.url, timeout=10) as client:
        for response in responses:
            assert client.get(f"/v1/judgements/{response.json()['judgement_id']}").status_code == 200


# --------------------------------------------------------------------------- the lifespan's drain


async def _started(
    tmp_path: Path, latency_s: float, drain_timeout_s: float
) -> tuple[object, httpx.AsyncClient]:
    app = create_app(
        Settings(backend="fake", home_dir=tmp_path, drain_timeout_s=drain_timeout_s),
        backend=FakeBackend(latency_s=latency_s),
    )
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://judge.test")
    for _ in range(500):
        if (await client.get("/readyz")).status_code == 200:
            return lifespan, client
        await asyncio.sleep(0.01)
    raise TimeoutError("the service never became ready")


async def _until_in_flight(client: httpx.AsyncClient) -> None:
    for _ in range(500):
        if metric_value((await client.get("/metrics")).text, "judge_groups_in_flight") >= 1:
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("the group never got in flight")


async def test_shutdown_waits_for_the_group_in_flight_and_refuses_new_ones(tmp_path: Path) -> None:
    lifespan, client = await _started(tmp_path, latency_s=0.5, drain_timeout_s=10)
    in_flight = asyncio.create_task(client.post("/v1/judge", json=group(2)))
    await _until_in_flight(client)
    shutdown = asyncio.create_task(lifespan.__aexit__(None, None, None))  # type: ignore[attr-defined]
    await asyncio.sleep(0.05)

    refused = await client.post("/v1/judge", json=group(1))
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "shutting_down"
    assert refused.headers["Retry-After"] == "1"
    assert (await client.get("/readyz")).json() == {"status": "draining", "backend": "fake"}
    assert not shutdown.done()

    response = await in_flight
    assert response.status_code == 200, response.text
    await asyncio.wait_for(shutdown, 5)
    await client.aclose()

    store = SqliteJudgementStore(tmp_path / "judgements.sqlite3")
    await store.open()
    try:
        assert await store.get(response.json()["judgement_id"]) is not None
    finally:
        await store.close()


async def test_drain_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    lifespan, client = await _started(tmp_path, latency_s=30, drain_timeout_s=0.3)
    stuck = asyncio.create_task(client.post("/v1/judge", json=group(1)))
    await _until_in_flight(client)
    started = time.monotonic()
    await asyncio.wait_for(lifespan.__aexit__(None, None, None), 5)  # type: ignore[attr-defined]
    assert time.monotonic() - started < 2
    stuck.cancel()
    await asyncio.gather(stuck, return_exceptions=True)
    await client.aclose()


# --------------------------------------------------------------------------- a save that fails


class SaveFailsOnce(SqliteJudgementStore):
    """The database refuses the first save (full, failing over), then works again."""

    failures = 1

    async def save(self, judgement: StoredJudgement, *, idempotency: IdempotencyKey | None = None) -> None:
        if self.failures:
            self.failures -= 1
            raise StoreUnavailableError("the judgement database is unavailable; retry in a few seconds")
        await super().save(judgement, idempotency=idempotency)


def test_a_failed_save_is_a_truthful_503_and_the_keyed_retry_is_not_judged_again(tmp_path: Path) -> None:
    backend = FakeBackend()
    store = SaveFailsOnce(tmp_path / "j.sqlite3")
    app = create_app(Settings(backend="fake", home_dir=tmp_path), backend=backend, store=store)
    with TestClient(app) as client:
        wait_ready(client)
        first = client.post("/v1/judge", json=group(2), headers={"Idempotency-Key": "k"})
        assert first.status_code == 503 and first.headers["retry-after"] == "2"
        error = first.json()["error"]
        assert error["code"] == "store_unavailable"
        assert "was judged but the judgement could not be stored" in error["message"]
        assert "same Idempotency-Key" in error["message"]
        retried = client.post("/v1/judge", json=group(2), headers={"Idempotency-Key": "k"})
        assert retried.status_code == 200
        assert retried.json()["judgement_id"] == error["details"]["judgement_id"]  # the kept judgement
        assert len(backend.requests) == 1  # not judged twice
        assert client.get(f"/v1/judgements/{error['details']['judgement_id']}").status_code == 200
        store.failures = 1
        unkeyed = client.post("/v1/judge", json=group(3))
        assert unkeyed.status_code == 503 and "send it again" in unkeyed.json()["error"]["message"]


class SaveHeld(SqliteJudgementStore):
    """A save that does not return until the test lets it: what the caller sees meanwhile is checked."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def save(self, judgement: StoredJudgement, *, idempotency: IdempotencyKey | None = None) -> None:
        self.entered.set()
        await self.release.wait()
        await super().save(judgement, idempotency=idempotency)


@pytest.mark.parametrize("path", ["/v1/judge", "/v1/judge/batch"])
async def test_no_response_leaves_before_the_save_returns(tmp_path: Path, path: str) -> None:
    store = SaveHeld(tmp_path / "j.sqlite3")
    app = create_app(Settings(backend="fake", home_dir=tmp_path), backend=FakeBackend(), store=store)
    body = group(2) if path == "/v1/judge" else {"groups": [group(2)]}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://judge") as client:
            for _ in range(500):
                if (await client.get("/readyz")).status_code == 200:
                    break
                await asyncio.sleep(0.01)
            reply = asyncio.ensure_future(client.post(path, json=body))
            await asyncio.wait_for(store.entered.wait(), timeout=10)
            for _ in range(50):  # every other task runs meanwhile: a reply sent early would be done
                await asyncio.sleep(0.002)
            assert not reply.done(), "a response left before its judgement was saved"
            store.release.set()
            response = await reply
    assert response.status_code == 200
