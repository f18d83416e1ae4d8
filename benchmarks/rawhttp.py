"""A lean HTTP/1.1 client for capacity runs, where httpx itself would be the bottleneck."""

from __future__ import annotations

import asyncio
import contextlib


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
