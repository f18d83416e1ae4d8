"""The deadline protocol (server/connections.py) on a scripted transport: the cases a real socket test
cannot reach easily. A pipelined request is not cut off while the one before it is answered, and a
connection whose request was answered before its body came is closed once idle."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from judge_service.server.connections import DeadlineProtocol, with_deadlines

HEADER_S = BODY_S = 0.2


class Transport(asyncio.Transport):
    """What the protocol writes, and whether it closed the connection."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed_at: float | None = None
        self.protocol: Any = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        if self.closed_at is None:
            self.closed_at = asyncio.get_running_loop().time()
            self.protocol.connection_lost(None)

    def is_closing(self) -> bool:
        return self.closed_at is not None

    def get_protocol(self) -> Any:
        return self.protocol

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def connect(app: Any) -> tuple[DeadlineProtocol, Transport]:
    config = uvicorn.Config(app, http=with_deadlines(HEADER_S, BODY_S), log_level="error")
    config.load()
    protocol = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})
    assert isinstance(protocol, DeadlineProtocol)
    transport = Transport()
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport


async def answer(send: Send, status: int = 200) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_a_pipelined_request_waits_for_the_one_before_it_without_being_cut_off() -> None:
    async def slow(scope: Scope, receive: Receive, send: Send) -> None:
        await asyncio.sleep(3 * HEADER_S)  # longer than the next request's header deadline
        await answer(send)

    protocol, transport = connect(slow)
    loop = asyncio.get_running_loop()
    protocol.data_received(
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHo"
    )  # /b's head is cut short
    await until(lambda: transport.written.startswith(b"HTTP/1.1 200"))  # /a answered after 3 deadlines
    answered = loop.time()
    assert transport.closed_at is None  # /b was not cut off while it waited: its clock starts now
    await until(lambda: transport.closed_at is not None)
    assert transport.closed_at is not None and transport.closed_at - answered >= HEADER_S * 0.9
    assert transport.written.count(b"HTTP/1.1 408") == 1 and b"JUDGE_HEADER_TIMEOUT_S" in transport.written


async def until(condition: Any, timeout_s: float = 10.0) -> None:
    """Polls `condition`, with room for a loaded machine's scheduling (the deadlines are 0.2 s)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


async def test_a_request_answered_before_its_body_came_leaves_an_idle_connection_that_closes() -> None:
    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        await answer(send, 401)  # as auth does: the body is never read

    protocol, transport = connect(refuse)
    protocol.data_received(b"POST /v1/judge HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
    await until(lambda: transport.written.startswith(b"HTTP/1.1 401"))
    assert transport.closed_at is None
    protocol.data_received(b"67890")  # the rest of the body, after the answer
    await until(lambda: transport.closed_at is not None)  # idle since: closed, with nothing more written
    assert transport.written.count(b"HTTP/1.1") == 1
