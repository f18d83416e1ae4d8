"""One line per HTTP request when JUDGE_ACCESS_LOG is on, naming the key that asked (never the key).

Written here rather than by uvicorn, whose access log knows nothing of API keys:
`127.0.0.1:51234 "POST /v1/judge" 200 41.2ms key=trainer-a` (`key=-` without keys or on a public route).
The query string is left out: it can hold what a person typed into a page.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge_service.api.middleware.auth import caller_of

log = logging.getLogger("judge_service.access")


class AccessLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            client = scope.get("client")
            where = f"{client[0]}:{client[1]}" if client else "-"
            log.info(
                '%s "%s %s" %d %.1fms key=%s',
                where,
                scope["method"],
                scope["path"],
                status,
                (time.perf_counter() - started) * 1000,
                caller_of(scope) or "-",
            )
