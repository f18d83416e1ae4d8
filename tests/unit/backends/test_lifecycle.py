"""The engine's lifecycle (backends/lifecycle.py) on its own: where it starts, and the gate's accounting."""

from __future__ import annotations

import asyncio

import pytest

from judge_service.backends.base import GenerationRequest
from judge_service.backends.fake import FakeBackend
from judge_service.backends.lifecycle import EngineLifecycle, GatedBackend
from judge_service.errors import CannotSleepError, EngineAsleepError
from judge_service.metrics import JudgeMetrics


def lifecycle(backend: object, **extra: float) -> EngineLifecycle:
    settings = {"hold_s": 0.2, "drain_timeout_s": 5.0, **extra}
    return EngineLifecycle(backend, JudgeMetrics(), busy_slots=lambda: 0, **settings)


async def test_a_backend_that_sleeps_already_starts_the_service_asleep() -> None:
    """A service started again over a backend object it had put to sleep: the gate is closed at once."""
    backend = FakeBackend()
    await backend.sleep(1)
    states = lifecycle(backend)
    assert states.state == "asleep" and not states.awake
    with pytest.raises(EngineAsleepError):
        await states.wait_awake()
    assert (await states.wake()).state == "awake" and not backend.asleep


async def test_a_backend_that_cannot_sleep_is_refused_and_serves_on() -> None:
    class NoSleep:
        model_name = "x"

    states = lifecycle(NoSleep())
    with pytest.raises(CannotSleepError, match="cannot sleep"):
        await states.sleep(1)
    assert states.awake and states.status().why_not == "this judge backend cannot sleep"


async def test_calls_outside_a_slot_are_waited_for_and_held() -> None:
    backend = FakeBackend(latency_s=0.3, record=False, script=["one"])
    states = lifecycle(backend)
    gated = GatedBackend(backend, states)
    request = GenerationRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=16)
    call = asyncio.create_task(gated.generate(request))
    await asyncio.sleep(0.05)
    assert states.calls_in_flight == 1
    slept = asyncio.create_task(states.sleep(1))
    await asyncio.sleep(0.05)
    assert states.state == "draining" and not backend.asleep  # the call is still running
    await call
    assert (await slept).state == "asleep" and states.calls_in_flight == 0
    with pytest.raises(EngineAsleepError):
        await gated.generate(request)  # held 0.2 s, then refused; never reaches the sleeping engine
    assert gated.model_name == backend.model_name  # everything else is the backend's own
