"""uvicorn's HTTP protocol with deadlines for what a client sends: a request's headers, then its body.

uvicorn closes a keep-alive connection left idle between requests (JUDGE_KEEP_ALIVE_S, its
timeout_keep_alive), but has no timer for a connection that never sends a request, nor for one that sends
its headers or body a byte at a time: each would hold a socket, and (a body) an in-flight slot, for as long
as its client likes. Here:

- a request's headers must arrive within JUDGE_HEADER_TIMEOUT_S of the connection's opening (its first
  request) or of the request's first byte (later ones);
- its body within JUDGE_BODY_TIMEOUT_S of its headers.

Past either, the client gets 408 `request_timeout` (the service's error JSON) and the connection is
closed; a connection that never sent a byte is just closed, and so is one whose request was answered before
its body came (a refusal) once the body deadline passes. The app sees a disconnect: a request whose body
never arrived was never handed to a route (api/middleware/limits.py). A pipelined request's clock starts
once the request before it is answered.

The deadlines live here rather than in ASGI middleware because this is where the bytes arrive: a request
that comes in one read (the usual case) starts no timer, while asyncio.timeout per request in middleware
cost about 8 us each. Built on uvicorn's httptools protocol (uvicorn[standard] installs httptools, and
uvicorn picks it when it is there), reading its parser's state after each read; pyproject.toml bounds
uvicorn's version for that reason, and tests/api/test_slow_clients.py fails if they change.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_HEAD, _BODY = "head", "body"


class DeadlineProtocol(HttpToolsProtocol):
    header_timeout_s = 10.0
    body_timeout_s = 60.0
    late_headers = b""  # the 408s written when a deadline passes (with_deadlines)
    late_body = b""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: str | None = None  # what the timer waits for: a request's _HEAD or _BODY
        self._since = 0.0  # when that wait began (loop time)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait(_HEAD)  # the first request's headers count from the opening

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # The usual request comes whole in one read: nothing pending, no timer. Otherwise the deadline
        # of what is still missing starts now (or keeps running, for the same part).
        pending = self._pending()
        if pending != self._waiting and (pending is not None or self._timer is not None):
            self._wait(pending)

    def connection_lost(self, exc: Exception | None) -> None:
        self._wait(None)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request waited behind this one without its clock running: it starts now.
        if self._waiting is not None and not self.transport.is_closing():
            self._wait(self._pending())

    def _pending(self) -> str | None:
        """What of the newest request has not arrived: its headers, its body, or nothing. Read from the
        parser's state: on_message_begin starts a new headers list, on_headers_complete a cycle on it,
        on_message_complete ends its body."""
        if self.headers is None:
            return None  # no request begun
        cycle = self.cycle
        if cycle is None or cycle.scope["headers"] is not self.headers:
            return _HEAD
        return _BODY if cycle.more_body else None

    def _wait(self, part: str | None) -> None:
        """Wait for `part` from now on (None: for nothing)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting = part
        if part is not None:
            self._since = self.loop.time()
            self._timer = self.loop.call_later(self._timeout(part), self._deadline)

    def _timeout(self, part: str) -> float:
        return self.header_timeout_s if part == _HEAD else self.body_timeout_s

    def _deadline(self) -> None:
        self._timer = None
        transport = self.transport
        if transport.is_closing() or transport.get_protocol() is not self:  # closed, or now a websocket
            return
        if self.headers is None:
            transport.close()  # nothing was asked in time: nothing to answer
            return
        part, cycle = self._pending(), self.cycle
        if part is None:
            self._waiting = None
            return
        if part != self._waiting or self._behind_another(part):
            self._wait(part)  # a new wait: its clock starts now
            return
        left = self._since + self._timeout(part) - self.loop.time()
        if left > 0:  # asyncio may run a timer up to a clock tick early
            self._timer = self.loop.call_later(left, self._deadline)
            return
        if part == _HEAD:
            transport.write(self.late_headers)  # a request before it, if any, is answered
        elif cycle is None or not cycle.response_started:
            transport.write(self.late_body)
        transport.close()

    def _behind_another(self, part: str) -> bool:
        """A pipelined request, parsed while the one before it is still being answered (its body is not
        read until then)."""
        if part == _HEAD:
            return self.cycle is not None and not self.cycle.response_complete
        return bool(self.pipeline)


def with_deadlines(header_timeout_s: float, body_timeout_s: float) -> type[DeadlineProtocol]:
    """The protocol class for uvicorn's Config(http=...), with JUDGE_HEADER_TIMEOUT_S and
    JUDGE_BODY_TIMEOUT_S."""

    class Configured(DeadlineProtocol):
        pass

    Configured.header_timeout_s = header_timeout_s
    Configured.body_timeout_s = body_timeout_s
    Configured.late_headers = _timeout_response(
        f"the request's headers did not arrive within {header_timeout_s:g} s (JUDGE_HEADER_TIMEOUT_S)",
        header_timeout_s,
    )
    Configured.late_body = _timeout_response(
        f"the request body did not arrive within {body_timeout_s:g} s of its headers (JUDGE_BODY_TIMEOUT_S)",
        body_timeout_s,
    )
    return Configured


def _timeout_response(what: str, limit_s: float) -> bytes:
    """408 with the service's error JSON (api/errors.py), closing the connection."""
    error = {"code": "request_timeout", "message": f"{what}; send the whole request at once"}
    body = json.dumps({"error": {**error, "details": {"limit_s": limit_s}}}).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body
