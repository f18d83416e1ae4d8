"""The judge engine's sleep and wake (backends/lifecycle.py) on the fake judge, which sleeps and wakes with
a latency and fails any call that reaches it while asleep: groups in flight survive a draining sleep,
groups that arrive while it sleeps wait at most the hold and then get a 503 with Retry-After, a wake
lets the held ones through, readiness says asleep, and many cycles under load leave nothing stuck."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.app import create_app
from judge_service.backends.fake import LEAVE_ONE_UNSCORED, FakeBackend
from judge_service.backends.vllm_engine import EngineOptions, VLLMEngineBackend
from judge_service.client import AsyncJudgeClient, JudgeClientError
from judge_service.config import Settings
from tests.service_process import group


def settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(backend="fake", home_dir=tmp_path, **extra)


class Running:
    """The app in process, served through httpx's ASGI transport, its lifespan entered."""

    def __init__(self, tmp_path: Path, backend: FakeBackend, **extra: Any) -> None:
        self.backend = backend
        self.app = create_app(settings(tmp_path, **extra), backend=backend)

    async def __aenter__(self) -> httpx.AsyncClient:
        self._lifespan = self.app.router.lifespan_context(self.app)
        await self._lifespan.__aenter__()
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://127.0.0.1:8000", timeout=60
        )
        deadline = time.monotonic() + 10
        while (await self.client.get("/readyz")).status_code != 200:
            assert time.monotonic() < deadline, "never ready"
            await asyncio.sleep(0.01)
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()
        await self._lifespan.__aexit__(None, None, None)


async def test_groups_in_flight_survive_a_draining_sleep(tmp_path: Path) -> None:
    backend = FakeBackend(latency_s=0.3, sleep_latency_s=0.05, record=False)
    async with Running(tmp_path, backend, max_groups_in_flight=64) as client:
        flying = [asyncio.create_task(client.post("/v1/judge", json=group(4))) for _ in range(64)]
        await asyncio.sleep(0.1)  # all 64 hold a slot and wait on the judge
        slept = await client.post("/v1/engine/sleep", json={"level": 1})
        assert slept.status_code == 200, slept.text
        assert slept.json()["state"] == "asleep" and slept.json()["freed_bytes"] == 2**30
        replies = await asyncio.gather(*flying)
        assert [r.status_code for r in replies] == [200] * 64
        assert all(a["status"] == "scored" for r in replies for a in r.json()["answers"])
        ready = await client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "asleep"
        status = (await client.get("/v1/engine")).json()
        assert status["state"] == "asleep" and status["level"] == 1 and status["can_sleep"]
        woken = await client.post("/v1/engine/wake")
        assert woken.json()["state"] == "awake"
        assert (await client.get("/readyz")).status_code == 200


async def test_a_group_that_arrives_while_asleep_waits_at_most_the_hold_then_gets_a_503(
    tmp_path: Path,
) -> None:
    async with Running(tmp_path, FakeBackend(record=False), sleep_hold_s=1.0) as client:
        assert (await client.post("/v1/engine/sleep", json={"level": 2})).status_code == 200
        started = time.monotonic()
        refused = await client.post("/v1/judge", json=group(3))
        waited = time.monotonic() - started
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "engine_asleep"
        assert refused.headers["Retry-After"] == "5"
        assert 1.0 <= waited < 2.0
        # A group held while asleep goes through once the engine is woken, within the hold.
        held = asyncio.create_task(client.post("/v1/judge", json=group(3)))
        await asyncio.sleep(0.3)
        assert not held.done()
        assert (await client.post("/v1/engine/wake")).status_code == 200
        reply = await held
        assert reply.status_code == 200, reply.text
        metrics = (await client.get("/metrics")).text
        assert 'judge_engine_sleep_requests_total{outcome="held"} 2.0' in metrics
        assert 'judge_engine_sleep_requests_total{outcome="refused"} 1.0' in metrics
        assert 'judge_engine_state{state="awake"} 1.0' in metrics


async def test_a_sleep_without_drain_refuses_new_groups_at_once(tmp_path: Path) -> None:
    async with Running(tmp_path, FakeBackend(record=False), sleep_hold_s=30.0) as client:
        slept = await client.post("/v1/engine/sleep", json={"level": 1, "drain": False})
        assert slept.status_code == 200
        started = time.monotonic()
        refused = await client.post("/v1/judge", json=group(3))
        assert refused.status_code == 503 and time.monotonic() - started < 1.0
        assert (await client.post("/v1/engine/wake")).status_code == 200
        assert (await client.post("/v1/judge", json=group(3))).status_code == 200


async def test_a_sleep_that_cannot_drain_in_time_is_refused_and_the_engine_serves_on(tmp_path: Path) -> None:
    backend = FakeBackend(latency_s=1.5, record=False)
    async with Running(tmp_path, backend, sleep_drain_timeout_s=0.3, wake_check=False) as client:
        flying = asyncio.create_task(client.post("/v1/judge", json=group(2)))
        await asyncio.sleep(0.1)
        refused = await client.post("/v1/engine/sleep", json={"level": 1})
        assert refused.status_code == 409 and "still in flight" in refused.json()["error"]["message"]
        assert (await client.get("/v1/engine")).json()["state"] == "awake"
        assert (await flying).status_code == 200 and backend.sleeps == 0


async def test_sleeping_twice_is_a_409_and_waking_an_awake_engine_changes_nothing(tmp_path: Path) -> None:
    async with Running(tmp_path, FakeBackend(record=False)) as client:
        assert (await client.post("/v1/engine/wake")).json()["state"] == "awake"
        assert (await client.post("/v1/engine/sleep", json={"level": 1})).status_code == 200
        again = await client.post("/v1/engine/sleep", json={"level": 1})
        assert again.status_code == 409 and "wake it first" in again.json()["error"]["message"]
        bad = await client.post("/v1/engine/sleep", json={"level": 3})
        assert bad.status_code == 422


async def test_many_cycles_under_load_leave_nothing_stuck(tmp_path: Path) -> None:
    backend = FakeBackend(latency_s=0.01, record=False)
    async with Running(tmp_path, backend, sleep_hold_s=10.0) as client:
        stop = asyncio.Event()
        statuses: list[int] = []

        async def trainer(index: int) -> None:
            key = 0
            while not stop.is_set():
                key += 1
                reply = await client.post(
                    "/v1/judge", json=group(3), headers={"Idempotency-Key": f"load-{index}-{key}"}
                )
                statuses.append(reply.status_code)

        load = [asyncio.create_task(trainer(i)) for i in range(8)]
        gc.collect()
        for _ in range(100):
            assert (await client.post("/v1/engine/sleep", json={"level": 1})).status_code == 200
            await asyncio.sleep(0.005)
            assert (await client.post("/v1/engine/wake")).status_code == 200
            await asyncio.sleep(0.02)  # awake long enough for the held groups to go through
        stop.set()
        await asyncio.gather(*load)
        assert backend.sleeps == 100
        assert len(statuses) > 100 and set(statuses) == {200}  # each waited out its sleep, none lost
        assert backend.asleep is False and (await client.get("/v1/engine")).json()["state"] == "awake"
        assert (await client.get("/metrics")).text.count("judge_groups_in_flight 0.0") == 1  # no slot held


def test_the_cpu_build_of_vllm_says_why_its_engine_cannot_sleep() -> None:
    """The real vLLM installed here (the CPU build): the engine refuses, naming the platform, whatever
    JUDGE_SLEEP_MODE says; the service keeps serving (tests/engine has the route's 409)."""
    backend = VLLMEngineBackend(EngineOptions(model=None, served_model_name="judge", sleep_mode=True))
    why = backend.why_no_sleep()
    assert why is not None and "CpuPlatform" in why and "no sleep mode" in why


@pytest.mark.parametrize("level", [1, 2])
async def test_sleep_and_wake_take_the_admin_scope(tmp_path: Path, level: int) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(
        json.dumps(
            {
                "keys": [
                    {"name": "trainer", "sha256": _sha("trainer-key-123456"), "scopes": ["judge", "read"]},
                    {"name": "operator", "sha256": _sha("admin-key-123456"), "scopes": ["admin"]},
                ]
            }
        )
    )
    async with Running(tmp_path, FakeBackend(record=False), api_keys_file=keys) as client:
        trainer = {"Authorization": "Bearer trainer-key-123456"}
        admin = {"Authorization": "Bearer admin-key-123456"}
        assert (
            await client.post("/v1/engine/sleep", json={"level": level}, headers=trainer)
        ).status_code == 403
        assert (await client.get("/v1/engine", headers=trainer)).status_code == 403
        assert (
            await client.post("/v1/engine/sleep", json={"level": level}, headers=admin)
        ).status_code == 200
        assert (await client.post("/v1/engine/wake", headers=admin)).status_code == 200


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


async def test_a_wake_that_brings_the_judge_back_wrong_keeps_it_out_of_service(tmp_path: Path) -> None:
    backend = FakeBackend(record=False, corrupt_wake=True)
    async with Running(tmp_path, backend, sleep_hold_s=0.5) as client:
        before = await client.post("/v1/judge", json=group(3))
        assert (await client.post("/v1/engine/sleep", json={"level": 2})).status_code == 200
        woken = (await client.post("/v1/engine/wake")).json()
        assert woken["state"] == "failed" and woken["error"].startswith("verify_failed: ")
        assert "mark" in woken["last_check"]
        ready = await client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "verify_failed"
        # No group reaches the judge now, so none is judged and stored by it.
        refused = await client.post("/v1/judge", json=group(3))
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "engine_asleep"
        listed = (await client.get("/v1/judgements/" + before.json()["judgement_id"])).status_code
        assert listed == 200
        metrics = (await client.get("/metrics")).text
        assert 'judge_engine_wake_checks_total{outcome="failed"} 1.0' in metrics
        # Woken again, right this time: checked and back in service.
        backend.corrupt_wake = False
        again = (await client.post("/v1/engine/wake")).json()
        assert again["state"] == "awake" and again["last_check"] == "marks as before"
        assert (await client.post("/v1/judge", json=group(3))).status_code == 200


async def test_a_sound_wake_passes_its_check_and_the_check_can_be_turned_off(tmp_path: Path) -> None:
    async with Running(tmp_path, FakeBackend(record=False)) as client:
        assert (await client.post("/v1/engine/sleep", json={"level": 1})).status_code == 200
        woken = (await client.post("/v1/engine/wake")).json()
        assert woken["state"] == "awake" and woken["last_check"] == "marks as before"
    backend = FakeBackend(record=False, corrupt_wake=True)
    async with Running(tmp_path / "off", backend, wake_check=False) as client:
        assert (await client.post("/v1/engine/sleep", json={"level": 1})).status_code == 200
        woken = (await client.post("/v1/engine/wake")).json()
        assert woken["state"] == "awake" and woken["last_check"] is None  # nobody looked


async def test_the_client_sleeps_wakes_and_reads_the_engine(tmp_path: Path) -> None:
    running = Running(tmp_path, FakeBackend(record=False))
    async with running:
        transport = httpx.ASGITransport(app=running.app)
        async with AsyncJudgeClient("http://127.0.0.1:8000", transport=transport) as client:
            assert (await client.engine()).state == "awake"
            slept = await client.engine_sleep(2, drain=False)
            assert slept.state == "asleep" and slept.level == 2
            with pytest.raises(JudgeClientError) as twice:
                await client.engine_sleep()
            assert twice.value.status == 409
            woken = await client.engine_wake()
            assert woken.state == "awake" and woken.last_check == "marks as before"


async def test_a_graders_model_call_waits_for_the_engine_as_groups_do(tmp_path: Path) -> None:
    """RFT model graders call the engine outside any group's slot: they wait at the same gate, and a
    draining sleep waits for them (a sleeping engine is never called: the fake fails if it is)."""
    body = {
        "grader": {
            "type": "score_model",
            "name": "s",
            "model": "m",
            "input": [{"role": "user", "content": "Rate 0-10: {{sample.output_text}}"}],
            "range": [0, 10],
        },
        "model_sample": "Click Share.",
    }
    backend = FakeBackend(record=False, latency_s=0.3)
    async with Running(tmp_path, backend, sleep_hold_s=0.5, wake_check=False) as client:
        flying = asyncio.create_task(client.post("/v1/fine_tuning/alpha/graders/run", json=body))
        await asyncio.sleep(0.1)
        assert (await client.post("/v1/engine/sleep", json={"level": 1})).status_code == 200
        assert (await flying).status_code == 200  # in flight when the sleep came: it finished first
        refused = await client.post("/v1/fine_tuning/alpha/graders/run", json=body)
        # The route answers in the hosted API's shape: the failure flagged in metadata, never a silent score.
        errors = refused.json()["metadata"]["errors"]
        assert errors["model_grader_server_error"] is True
        assert "engine is asleep" in errors["model_grader_server_error_details"]


async def test_a_groups_retries_go_on_while_a_sleep_waits_for_its_slot(tmp_path: Path) -> None:
    """A group whose reply is retried (here: one answer never marked, so every attempt is retried) makes
    its later calls while a sleep drains: they go on, the group completes, and then the engine sleeps."""
    body = group(3)
    body["conversation"][0]["content"] += " " + LEAVE_ONE_UNSCORED
    backend = FakeBackend(latency_s=0.2, record=False)
    async with Running(tmp_path, backend, wake_check=False) as client:
        flying = asyncio.create_task(client.post("/v1/judge", json=body))
        await asyncio.sleep(0.05)
        slept = asyncio.create_task(client.post("/v1/engine/sleep", json={"level": 1}))
        reply = await flying
        assert reply.status_code == 200, reply.text
        statuses = [a["status"] for a in reply.json()["answers"]]
        assert statuses.count("unscored") == 1 and statuses.count("scored") == 2
        assert reply.json()["attempts"] > 1  # its retries ran while the sleep was draining
        assert (await slept).json()["state"] == "asleep"


async def test_stopping_the_service_answers_groups_held_for_a_wake_at_once(tmp_path: Path) -> None:
    running = Running(tmp_path, FakeBackend(record=False), sleep_hold_s=30.0, wake_check=False)
    client = await running.__aenter__()
    assert (await client.post("/v1/engine/sleep", json={"level": 1})).status_code == 200
    held = asyncio.create_task(client.post("/v1/judge", json=group(2)))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    running.app.state.lifecycle.stop()
    reply = await held
    assert reply.status_code == 503 and reply.json()["error"]["code"] == "shutting_down"
    assert time.monotonic() - started < 2
    await running.__aexit__(None, None, None)
