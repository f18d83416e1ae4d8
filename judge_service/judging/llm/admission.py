"""Bounded admission of groups to the judge: at most N in flight, at most M waiting, the rest refused.

Refusing early (429 + Retry-After) keeps memory bounded and tells trainers to back off, instead of
letting a queue grow until requests time out.

Waiting groups are served in turns by API key, not first come first served: each key with groups
waiting has its own queue, and a freed slot goes to the next key in turn (round robin), so a key with
two groups waiting behind another key's hundred waits for about one slot, not a hundred. The key is the
one the HTTP layer put in ADMISSION_KEY (api/shares.py); without API keys every group shares one queue,
as first come first served.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Protocol

from judge_service.backends.lifecycle import IN_SLOT
from judge_service.errors import OverloadedError
from judge_service.metrics import JudgeMetrics


class Gate(Protocol):
    """What the admission asks before a slot: whether the engine is awake, and to wait until it is
    (backends/lifecycle.py)."""

    @property
    def awake(self) -> bool: ...

    async def wait_awake(self) -> None: ...


# The name of the API key a group is judged for; set by the HTTP layer around a request.
ADMISSION_KEY: ContextVar[str] = ContextVar("admission_key", default="")


class GroupAdmission:
    def __init__(self, max_in_flight: int, max_queued: int, metrics: JudgeMetrics) -> None:
        self._free = self._max_in_flight = max_in_flight
        self._gate: Gate | None = None
        self._max_queued = max_queued
        self._waiting = 0
        self._queues: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()  # keys with groups waiting, in the order they are served
        self._metrics = metrics

    @property
    def saturated(self) -> bool:
        """Every slot is taken: a group arriving now would wait (the audit judge waits instead)."""
        return self._free == 0

    @property
    def busy_slots(self) -> int:
        """Groups holding a slot now (a draining sleep waits for none to be left)."""
        return self._max_in_flight - self._free

    def set_gate(self, gate: Gate) -> None:
        """Groups wait at `gate` before taking a slot while it is not open (the engine asleep)."""
        self._gate = gate

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        gate = self._gate
        while True:
            if gate is not None and not gate.awake:
                await gate.wait_awake()  # held while the engine sleeps; a 503 past the hold
            if self._free > 0:  # a free slot means nobody is waiting: freed slots go to waiters first
                self._free -= 1
            else:
                await self._wait(ADMISSION_KEY.get())
            if gate is None or gate.awake:
                break
            self._release()  # the engine began to sleep while this group waited: back to the gate
        self._metrics.in_flight.inc()
        token = IN_SLOT.set(True)
        try:
            yield
        finally:
            IN_SLOT.reset(token)
            self._metrics.in_flight.dec()
            self._release()

    async def _wait(self, key: str) -> None:
        if self._waiting >= self._max_queued:
            raise OverloadedError(
                f"the judge queue is full ({self._waiting} groups waiting); retry later",
                retry_after_s=max(1, self._waiting // 32),
            )
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = deque()
            self._turns.append(key)
        queue.append(granted)
        self._waiting += 1
        self._metrics.queue_depth.set(self._waiting)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # handed a slot just as it was cancelled: pass it on
            else:
                self._forget(key, granted)
            raise
        finally:
            self._waiting -= 1
            self._metrics.queue_depth.set(self._waiting)

    def _release(self) -> None:
        """Hand the slot to the next key in turn, else free it."""
        while self._turns:
            key = self._turns.popleft()
            queue = self._queues[key]
            granted = queue.popleft()
            if queue:
                self._turns.append(key)  # its next group waits for the key's next turn
            else:
                del self._queues[key]
            if not granted.done():
                granted.set_result(None)
                return
        self._free += 1

    def _forget(self, key: str, granted: asyncio.Future[None]) -> None:
        queue = self._queues.get(key)
        if queue is None or granted not in queue:
            return
        queue.remove(granted)
        if not queue:
            del self._queues[key]
            self._turns.remove(key)
