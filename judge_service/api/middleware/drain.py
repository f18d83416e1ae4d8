"""Requests in flight: counted, capped, and drained at shutdown before the app closes its store.

`DrainGate` is pure ASGI middleware that counts the requests in flight (health and metrics aside).
It sits inside the body reader (limits.py), so a request counts once its body has arrived: a client
that sends slowly holds no slot. Past `max_in_flight` a new request gets 429 `overloaded` (before its
body is read: the reader leaves it unread while `refusing()`): the admission queue bounds the groups
waiting for the judge, this bounds the requests being validated or answered, and so (with the
body-size cap) the memory their bodies hold.
At shutdown the lifespan calls `drain()`: from then on new requests get 503 `shutting_down` (retry on
another replica), and the call returns once the in-flight ones have finished, or after the timeout.
Without it, closing the backend and the store under a group still being judged would turn finished
judge work into a 500 and lose it; uvicorn already waits for open requests, but only up to its own
timeout, and other servers may not wait at all.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from judge_service.api.errors import error_response
from judge_service.api.paths import METRICS, PROBES

log = logging.getLogger(__name__)

# Always answered, also while draining: probes must see the state, not a refusal.
UNTRACKED_PATHS = PROBES | {METRICS}


class DrainState:
    """Shared by the middleware (counts requests), the body reader (skips bodies it would refuse) and
    the lifespan (waits for them)."""

    def __init__(self, max_in_flight: int) -> None:
        self.active = 0
        self.max_in_flight = max_in_flight
        self.reopen()

    def refusing(self) -> bool:
        """A request arriving now would be refused: the service is draining, or the cap is full."""
        return self.draining or self.active >= self.max_in_flight

    def reopen(self) -> None:
        """Accept requests again (lifespan startup): a fresh event bound to the running loop."""
        self.draining = False
        self._idle = asyncio.Event()
        if self.active == 0:
            self._idle.set()

    def enter(self) -> None:
        self.active += 1
        self._idle.clear()

    def leave(self) -> None:
        self.active -= 1
        if self.active == 0:
            self._idle.set()

    async def drain(self, timeout_s: float) -> bool:
        """Refuse new requests and wait for the active ones; True when none is left."""
        self.draining = True
        if self.active:
            log.info("draining: waiting up to %.0f s for %d request(s) in flight", timeout_s, self.active)
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            log.warning("drain timed out after %.0f s with %d request(s) in flight", timeout_s, self.active)
            return False
        log.info("drained: no request in flight")
        return True


class DrainGate:
    def __init__(self, app: ASGIApp, state: DrainState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNTRACKED_PATHS:
            await self.app(scope, receive, send)
            return
        if self.state.draining:
            response = error_response(
                503,
                "shutting_down",
                "the service is shutting down and takes no new requests; retry shortly (another "
                "replica, or this one once restarted)",
                headers={"Retry-After": "1", "Connection": "close"},
            )
            await response(scope, receive, send)
            return
        if self.state.active >= self.state.max_in_flight:
            response = error_response(
                429,
                "overloaded",
                f"the service is handling {self.state.active} requests, its limit "
                "(JUDGE_MAX_REQUESTS_IN_FLIGHT); retry after Retry-After seconds, or send groups in "
                "batches (POST /v1/judge/batch) instead of one request each",
                {"limit": self.state.max_in_flight},
                headers={"Retry-After": "1", "Connection": "close"},  # the unread body is not drained
            )
            await response(scope, receive, send)
            return
        self.state.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.state.leave()
