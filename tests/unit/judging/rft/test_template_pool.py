"""The render processes: killed on timeout, on cancellation and at close (mid-render too), and gone on
their own once their pool is."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest

from judge_service.judging.rft.template_pool import RenderPool, TemplateLimits, _Process

LIMITS = TemplateLimits(timeout_s=1.0, max_output_chars=10_000, memory_mb=64, workers=1)
SLOW: dict[str, Any] = {
    "op": "render",
    "template": "{% for a in item.xs %}{% for b in item.xs %}{% endfor %}{% endfor %}",
    "namespaces": {"item": {"xs": list(range(100_000))}, "sample": {}},
}
QUICK = {"op": "render", "template": "{{ item.a | upper }}", "namespaces": {"item": {"a": "b"}}}


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    rendering = RenderPool(LIMITS)
    yield rendering
    await rendering.close()
    assert rendering.processes() == 0


async def _busy(pool: RenderPool, message: dict[str, Any]) -> asyncio.Task[dict[str, Any]]:
    task = asyncio.create_task(pool.ask(message))
    for _ in range(500):
        if pool._busy:
            return task
        await asyncio.sleep(0.01)
    raise AssertionError("no render process took the request")


async def test_a_render_past_its_timeout_is_killed_and_the_next_gets_a_fresh_process(
    pool: RenderPool,
) -> None:
    first = await pool.ask(QUICK)
    assert first["ok"] is True and first["text"] == "B" and "timed_out" not in first
    (process,) = pool._idle
    reply = await pool.ask(SLOW)
    assert reply["ok"] is False and reply["message"] == "it took longer than 1 s to render"
    assert reply["timed_out"] is True and reply["seconds"] >= 1.0
    assert process.process.returncode is not None and pool.killed == 1
    assert (await pool.ask(QUICK))["text"] == "B"


async def test_a_cancelled_request_kills_its_process(pool: RenderPool) -> None:
    task = await _busy(pool, SLOW)
    (process,) = pool._busy
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert process.process.returncode is not None and pool.processes() == 0
    assert (await pool.ask(QUICK))["ok"]


async def test_close_ends_processes_mid_render(pool: RenderPool) -> None:
    task = await _busy(pool, SLOW)
    (process,) = pool._busy
    await pool.close()
    assert process.process.returncode is not None
    assert not (await task)["ok"]
    with pytest.raises(RuntimeError, match="closed"):
        await pool.ask(QUICK)


async def test_a_process_whose_pool_is_gone_exits() -> None:
    process = await _Process.start(LIMITS)
    assert process.process.stdin is not None
    process.process.stdin.close()  # what the pool's end looks like when the service dies
    assert await asyncio.wait_for(process.process.wait(), 5) == 0


async def test_a_render_whose_pool_is_gone_ends_at_its_own_deadline() -> None:
    process = await _Process.start(TemplateLimits(timeout_s=0.5))
    asking = asyncio.create_task(process.ask(SLOW, 2**20))
    await asyncio.sleep(0.2)
    asking.cancel()  # the pool stops reading and never kills it
    assert process.process.stdin is not None
    process.process.stdin.close()
    assert await asyncio.wait_for(process.process.wait(), 5) == -signal.SIGALRM
