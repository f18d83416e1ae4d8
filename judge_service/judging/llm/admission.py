"""Bounded admission of groups to the judge: at most N in flight, at most M waiting, the rest refused.

Refusing early (429 + Retry-After) keeps memory bounded and tells trainers to back off, instead of
letting a queue grow until requests time out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from judge_service.errors import OverloadedError
from judge_service.metrics import JudgeMetrics


class GroupAdmission:
    def __init__(self, max_in_flight: int, max_queued: int, metrics: JudgeMetrics) -> None:
        self._slots = asyncio.Semaphore(max_in_flight)
        self._max_queued = max_queued
        self._waiting = 0
        self._metrics = metrics

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._slots.locked() and self._waiting >= self._max_queued:
            raise OverloadedError(
                f"the judge queue is full ({self._waiting} groups waiting); retry later",
                retry_after_s=max(1, self._waiting // 32),
            )
        self._waiting += 1
        self._metrics.queue_depth.set(self._waiting)
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
            self._metrics.queue_depth.set(self._waiting)
        self._metrics.in_flight.inc()
        try:
            yield
        finally:
            self._metrics.in_flight.dec()
            self._slots.release()
