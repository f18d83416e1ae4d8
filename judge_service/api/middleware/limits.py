"""A cap on the request body, enforced before the body is parsed (pure ASGI middleware).

A declared Content-Length over the cap is refused before a byte of the body is read (one within the
cap is passed through as it is: the server delivers exactly the declared bytes); a body sent without
one (chunked) is counted as it streams, and refused the moment it passes the cap. Either way
the caller gets 413 `too_large` naming the limit, and the service never holds more than the cap (plus
one chunk) of any request in memory.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge_service.api.errors import error_response


class BodyTooLarge(Exception):
    """Raised from `receive` when the streamed body passes the cap; turned into 413 here."""


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send, f"declares {declared} bytes")
            return
        if declared is not None:
            # The server delivers exactly the declared bytes, so nothing is left to count.
            await self.app(scope, receive, send)
            return

        received = 0
        exceeded = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                return  # whatever the app makes of the aborted body, the caller gets our 413
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not exceeded:
                raise  # not ours: BodyTooLarge, or whatever the app made of it, is answered below
        if exceeded and not started:
            await self._refuse(scope, receive, send, f"passed {self.max_bytes} bytes while streaming")

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, what: str) -> None:
        limit = self.max_bytes
        response = error_response(
            413,
            "too_large",
            f"the request body {what}; the limit is {limit} bytes ({limit / 2**20:.2f} MiB, "
            "JUDGE_MAX_REQUEST_BYTES): send fewer groups per batch, or fewer or shorter answers",
            {"limit_bytes": limit},
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    """The declared body length, or None when there is none to trust (absent, malformed or chunked)."""
    length = None
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding":
            return None  # chunked wins over a Content-Length: count the stream
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None  # the server refuses a malformed length; the streamed count still applies
    return length
