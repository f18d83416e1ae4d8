"""The request body, read in full and capped in size before the app sees it (pure ASGI middleware).

- Size: a declared Content-Length over JUDGE_MAX_REQUEST_BYTES is refused before a byte of the body is
  read; a body sent without one (chunked) is counted as it arrives and refused the moment it passes the
  cap: 413 `too_large`. The service never holds more than the cap (plus one chunk) of any request.
- Whole: the app gets the body as one message, so the in-flight cap inside it (drain.py) counts only
  requests that have arrived: a client that sends slowly holds a socket, never a slot, and the server
  cuts it off at JUDGE_BODY_TIMEOUT_S with 408 (server/connections.py; the app then sees a disconnect and
  the request never reaches a route). While the cap is full the body is left unread: the gate refuses the
  request at once, and the service reads no body it would not serve.

Requests without a body (no Content-Length, or 0, and not chunked) pass straight through.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge_service.api.errors import error_response


class BodyTooLarge(Exception):
    """The streamed body passed the cap."""


class RequestBody:
    def __init__(self, app: ASGIApp, max_bytes: int, refusing: Callable[[], bool] = lambda: False) -> None:
        """`refusing`: whether the gate inside would refuse a request now (drain.DrainState.refusing)."""
        self.app = app
        self.max_bytes = max_bytes
        self._refusing = refusing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared, streamed = _framing(scope)
        if not streamed and not declared:
            await self.app(scope, receive, send)  # no body
            return
        if declared is not None and declared > self.max_bytes:
            await self._too_large(scope, receive, send, f"declares {declared} bytes")
            return
        if self._refusing():
            await self.app(scope, receive, send)  # refused by the gate with its body unread
            return
        try:
            body = await self._read(receive)
        except BodyTooLarge:
            await self._too_large(scope, receive, send, f"passed {self.max_bytes} bytes while streaming")
            return
        if body is not None:  # None: the client went away, and nobody is left to answer
            await self.app(scope, _replaying(body, receive), send)

    async def _read(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # http.disconnect
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > self.max_bytes:
                    raise BodyTooLarge
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, what: str) -> None:
        limit = self.max_bytes
        response = error_response(
            413,
            "too_large",
            f"the request body {what}; the limit is {limit} bytes ({limit / 2**20:.2f} MiB, "
            "JUDGE_MAX_REQUEST_BYTES): send fewer groups per batch, or fewer or shorter answers",
            {"limit_bytes": limit},
            headers={"Connection": "close"},  # the rest of the body is not read
        )
        await response(scope, receive, send)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then the server's own messages (a disconnect)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _framing(scope: Scope) -> tuple[int | None, bool]:
    """(declared Content-Length, streamed): streamed when chunked, or when the length cannot be trusted."""
    length = None
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            return None, True  # chunked wins over a Content-Length: count the stream
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None, True  # the server refuses a malformed length; counting still applies
    return length, False
