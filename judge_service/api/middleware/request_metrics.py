"""Counts every HTTP response by route template, status and key name, and, when JUDGE_ACCESS_LOG is on,
writes one access-log line per request naming the key that asked (never the key). Pure ASGI, one wrapper
for both, so it adds no task or copy.

(Starlette's BaseHTTPMiddleware would run each request through an extra task and a streaming wrapper,
which cost about a fifth of the service's CPU per group in the capacity benchmark.)

The access log is written here rather than by uvicorn, whose log knows nothing of API keys:
`127.0.0.1:51234 "POST /v1/judge" 200 41.2ms key=trainer-a` (`key=-` without keys or on a public route).
The query string is left out: it can hold what a person typed into a page.
"""

from __future__ import annotations

import logging
import time

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge_service.api.middleware.auth import caller_of
from judge_service.metrics import JudgeMetrics

access_log = logging.getLogger("judge_service.access")


class RequestMetrics:
    def __init__(self, app: ASGIApp, metrics: JudgeMetrics, *, log_requests: bool = False) -> None:
        self.app = app
        self.metrics = metrics
        self.log_requests = log_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter() if self.log_requests else 0.0
        status = 500  # what the client sees if the app fails before starting a response

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            key = caller_of(scope)
            self.metrics.child(self.metrics.requests, _endpoint(scope), str(status), key or "").inc()
            if self.log_requests:
                client = scope.get("client")
                access_log.info(
                    '%s "%s %s" %d %.1fms key=%s',
                    f"{client[0]}:{client[1]}" if client else "-",
                    scope["method"],
                    scope["path"],
                    status,
                    (time.perf_counter() - started) * 1000,
                    key or "-",
                )


def _endpoint(scope: Scope) -> str:
    """The route template the request was for: "/v1/judgements/{judgement_id}", never the raw path
    (bounded label values), or "unmatched" for a path the service does not have."""
    route = scope.get("route")  # recorded in the (shared) scope by the router
    if route is None:
        # Refused before routing (auth, size limit, drain): find the route it was meant for.
        app = scope.get("app")
        routes = getattr(getattr(app, "router", None), "routes", ())
        route = next((r for r in routes if r.matches(scope)[0] == Match.FULL), None)
    return getattr(route, "path", "unmatched")
