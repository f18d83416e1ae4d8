"""The worker pool on its own: a hung call stops counting against the pool's size (other graders keep
their latency), a cancelled call's worker is replaced, and the pool shrinks back to its size."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from judge_service.judging.code.pool import WorkerPool
from judge_service.judging.code.sandbox import WorkerLimits

HANGS = {"module": "tests.code_graders", "function": "hangs"}
TRIVIAL = {"module": "tests.code_graders", "function": "trivial"}
LIMITS = WorkerLimits(memory_mb=64)


def _sample(text: str) -> list[object]:
    return [{"output_text": text, "output_json": None}, {}]


@pytest.fixture
async def pool() -> AsyncIterator[WorkerPool]:
    workers = WorkerPool(1)
    yield workers
    await workers.close()


async def test_a_hung_call_does_not_hold_back_other_graders(pool: WorkerPool) -> None:
    hung = asyncio.create_task(pool.call(HANGS, None, [_sample("hang")], timeout_s=8, limits=LIMITS))
    await asyncio.sleep(0.1)
    started = time.perf_counter()
    (result,) = await pool.call(TRIVIAL, None, [_sample("x")], timeout_s=4, limits=LIMITS)
    waited = time.perf_counter() - started
    assert result.ok and result.value == 1.0
    # The stall frees the slot after 1 s; behind the hung call it would wait its 8 s timeout. The margin
    # is for starting a sandboxed worker on a loaded machine.
    assert waited < 5.0, f"the trivial call waited {waited:.1f} s behind the hung one"
    assert pool.alive_workers() == 2  # one extra worker while the call is stalled
    (timed_out,) = await hung
    assert timed_out.error == "grader_timeout"
    await asyncio.sleep(0.1)
    assert pool.alive_workers() <= 1  # back to its size once the stall ended


async def test_a_cancelled_call_kills_its_worker_and_the_pool_goes_on(pool: WorkerPool) -> None:
    hung = asyncio.create_task(pool.call(HANGS, None, [_sample("hang")], timeout_s=60, limits=LIMITS))
    await asyncio.sleep(0.5)
    hung.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hung
    assert pool.replaced == 1
    (result,) = await pool.call(TRIVIAL, None, [_sample("x")], timeout_s=5, limits=LIMITS)
    assert result.ok


async def test_calls_after_a_failure_go_to_a_fresh_worker(pool: WorkerPool) -> None:
    calls = [_sample("fine"), _sample("hang"), _sample("fine too")]
    results = await pool.call(HANGS, None, calls, timeout_s=1, limits=LIMITS)
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].error == "grader_timeout" and pool.replaced == 1
