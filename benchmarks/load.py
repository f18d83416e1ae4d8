"""Load generation: a fixed number of workers drawing from one queue, with latencies and failures; and the
same over HTTP with httpx."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class LoadResult:
    wall_s: float
    latencies_s: list[float]
    results: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> int:
        return len(self.latencies_s)

    def per_second(self, count: int | None = None) -> float:
        done = self.ok if count is None else count
        return done / self.wall_s if self.wall_s else float("nan")


async def run_load(items: Sequence[T], call: Callable[[T], Awaitable[R]], concurrency: int) -> LoadResult:
    """Run call(item) for every item with at most `concurrency` in flight (closed loop: a worker sends
    its next item as soon as its previous one returns). Latency is per call; errors are collected."""
    queue: asyncio.Queue[T] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    result = LoadResult(wall_s=0.0, latencies_s=[])

    async def worker() -> None:
        while True:
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            started = time.perf_counter()
            try:
                value = await call(item)
            except Exception as exc:
                result.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            result.latencies_s.append(time.perf_counter() - started)
            result.results.append(value)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items))))))
    result.wall_s = time.perf_counter() - started
    return result


async def post_all(
    url: str,
    path: str,
    bodies: Sequence[dict[str, Any]],
    concurrency: int,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> LoadResult:
    """POST every body to `path` (httpx, `concurrency` in flight); results are (body, JSON reply) pairs,
    aligned with the latencies. A failed request, or a reply `check` raises on, fails the whole load."""
    import httpx

    limits = httpx.Limits(max_connections=128)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def call(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
            response = await client.post(path, json=body)
            response.raise_for_status()
            reply: dict[str, Any] = response.json()
            if check is not None:
                check(reply)
            return body, reply

        result = await run_load(bodies, call, concurrency)
    if result.errors:
        raise RuntimeError(f"{len(result.errors)} requests failed, e.g. {result.errors[0]}")
    return result
