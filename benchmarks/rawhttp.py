"""A lean HTTP/1.1 client for capacity runs, where httpx itself would be the bottleneck, and closed-loop
load over it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field


class RawHTTPConnection:
    """A minimal keep-alive HTTP/1.1 client over one asyncio connection, for load generation where
    the client must cost far less than the server (httpx spends ~0.5 ms of CPU per request).
    Only what the service answers is supported: Content-Length bodies (no chunked encoding)."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)

    def request_bytes(self, path: str, body: bytes, headers: dict[str, str] | None = None) -> bytes:
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n{extra}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body

    async def send(self, payload: bytes) -> tuple[int, bytes]:
        """Send a prepared request; returns (status, body)."""
        if self._reader is None or self._writer is None:
            await self.connect()
        assert self._reader is not None and self._writer is not None
        self._writer.write(payload)
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = await self._reader.readexactly(length)
        return status, body

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        self._reader = self._writer = None


@dataclass
class LoopResult:
    wall_s: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    sample: bytes = b""  # the first reply's body


async def closed_loop(
    targets: Sequence[tuple[str, int]],
    payloads: Sequence[bytes],
    connections: int,
    until: float | asyncio.Event,
    after_reply: Callable[[int], Awaitable[None]] | None = None,
) -> LoopResult:
    """`connections` keep-alive connections, spread round robin over `targets` (host, port), each sending
    its next prepared request as soon as the last returns, until `until` (a time.perf_counter() deadline,
    or an event). A request that fails on the wire is counted in errors and its connection opened again;
    `after_reply(status)` runs after each reply (a client that waits after a 429)."""
    result = LoopResult()

    def running() -> bool:
        return not until.is_set() if isinstance(until, asyncio.Event) else time.perf_counter() < until

    async def worker(index: int, connection: RawHTTPConnection) -> None:
        i = index
        while running():
            payload = payloads[i % len(payloads)]
            i += connections
            started = time.perf_counter()
            try:
                status, body = await connection.send(payload)
            except (OSError, asyncio.IncompleteReadError) as exc:
                result.errors.append(f"{type(exc).__name__}: {exc}")
                await connection.close()
                continue
            result.latencies.append(time.perf_counter() - started)
            result.statuses[status] += 1
            result.sample = result.sample or body
            if after_reply is not None:
                await after_reply(status)

    opened = [RawHTTPConnection(*targets[i % len(targets)]) for i in range(connections)]
    for connection in opened:
        await connection.connect()
    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(i, c) for i, c in enumerate(opened)))
    finally:
        result.wall_s = time.perf_counter() - started
        for connection in opened:
            await connection.close()
    return result
