"""Which scope each route needs: the whole access policy in one table, enforced after routing.

Every route of the app must be in ROUTE_SCOPES: `gate_routes` refuses to build an app with a route the
table does not name (a new route cannot slip in unguarded), and writes each route's scope into its
OpenAPI operation as `x-scope`, so a client can see what its key needs.

The check runs as a thin wrapper around each route's own ASGI app, after routing and before the body is
parsed or any work is done (the body reader has read it, within its size cap and deadline): a key without
the scope gets 403 `forbidden` naming the scope it lacks, whatever its body. Requests without a principal
pass: either keys are off, or the route is public (the probes, and /metrics when public), which the auth
middleware has already decided.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from judge_service.api.errors import error_response
from judge_service.api.middleware.auth import principal_of
from judge_service.api.middleware.keys import Scope

JUDGE, READ, LABEL, ADMIN = Scope.JUDGE, Scope.READ, Scope.LABEL, Scope.ADMIN

# (method, route template) -> the scope it needs. GET and HEAD share an entry (GET).
ROUTE_SCOPES: Mapping[tuple[str, str], Scope] = {
    # The training loop.
    ("POST", "/v1/judge"): JUDGE,
    ("POST", "/v1/judge/batch"): JUDGE,
    ("POST", "/v1/judge/member"): JUDGE,
    ("POST", "/v1/compat/openrlhf"): JUDGE,
    ("POST", "/v1/fine_tuning/alpha/graders/run"): JUDGE,
    ("POST", "/v1/fine_tuning/alpha/graders/validate"): JUDGE,
    # A rubric is written once per prompt, as part of judging it (the same call "generate" makes).
    ("POST", "/v1/rubrics"): JUDGE,
    # Reading what was judged, and the service's own description.
    ("GET", "/v1/graders"): READ,
    ("GET", "/v1/judgements/{judgement_id}"): READ,
    ("GET", "/v1/judgements/{judgement_id}/audit"): READ,
    ("GET", "/v1/runs"): READ,
    ("GET", "/v1/runs/{run_id}/judgements"): READ,
    ("GET", "/v1/runs/{run_id}/steps"): READ,
    ("GET", "/v1/rubrics/{rubric_id}"): READ,
    ("GET", "/v1/judgements/{judgement_id}/labels"): READ,
    ("GET", "/v1/runs/{run_id}/labels"): READ,
    ("GET", "/v1/runs/{run_id}/agreement"): READ,
    # Reasons for marks already given: written once per judgement, asked for by people reading.
    ("POST", "/v1/judgements/{judgement_id}/reasons"): READ,
    ("GET", "/metrics"): READ,  # when JUDGE_METRICS_PUBLIC=false; public otherwise
    ("GET", "/openapi.json"): READ,
    ("GET", "/docs"): READ,
    ("GET", "/docs/oauth2-redirect"): READ,
    ("GET", "/redoc"): READ,
    ("GET", "/ui"): READ,
    ("GET", "/ui/"): READ,
    ("GET", "/ui/runs"): READ,
    ("GET", "/ui/runs/{run_id}"): READ,
    ("GET", "/ui/runs/{run_id}/steps/{step}"): READ,
    ("GET", "/ui/judgements/{judgement_id}"): READ,
    ("POST", "/ui/judgements/{judgement_id}/reasons"): READ,
    # A person's labels.
    ("PUT", "/v1/judgements/{judgement_id}/labels"): LABEL,
    ("POST", "/ui/judgements/{judgement_id}/labels"): LABEL,
    # What changes rewards or data after the fact.
    ("POST", "/v1/regrade"): ADMIN,
    ("POST", "/v1/quality/calibration"): ADMIN,
    ("POST", "/v1/quality/agreement"): ADMIN,
    ("PUT", "/v1/rubrics/{rubric_id}"): ADMIN,
    ("POST", "/v1/prune"): ADMIN,
    ("GET", "/v1/engine"): ADMIN,
    ("POST", "/v1/engine/sleep"): ADMIN,
    ("POST", "/v1/engine/wake"): ADMIN,
}

# Answered before any key is asked for (the auth middleware's public paths, and the sign-in itself,
# which checks the key it is given for `read`).
PUBLIC_ROUTES = frozenset({"/healthz", "/readyz", "/ui/signin"})


def route_scopes(route: BaseRoute) -> dict[str, Scope | None]:
    """Each method of a route with the scope it needs (None: public); KeyError for a method not in the
    table."""
    path = getattr(route, "path", "")
    methods = sorted(getattr(route, "methods", None) or {"GET"})
    scopes: dict[str, Scope | None] = {}
    for method in methods:
        if path in PUBLIC_ROUTES:
            scopes[method] = None
        elif method != "HEAD" or ("GET", path) in ROUTE_SCOPES:
            scopes[method] = ROUTE_SCOPES[("GET" if method == "HEAD" else method, path)]
    return scopes


def gate_routes(app: FastAPI) -> None:
    """Wrap every route in its scope check; RuntimeError naming any route ROUTE_SCOPES does not cover."""
    missing = []
    for route in app.router.routes:
        try:
            scopes = route_scopes(route)
        except KeyError:
            methods = ",".join(sorted(getattr(route, "methods", None) or {"GET"}))
            missing.append(f"{methods} {getattr(route, 'path', route)}")
            continue
        if not isinstance(route, Route) or not any(scopes.values()):
            continue
        route.app = ScopeGate(route.app, scopes)
        if isinstance(route, APIRoute):
            named = sorted({s.value for s in scopes.values() if s is not None})
            route.openapi_extra = {**(route.openapi_extra or {}), "x-scope": ",".join(named)}
    if missing:
        raise RuntimeError("route(s) without a scope in api/scopes.py ROUTE_SCOPES: " + "; ".join(missing))


class ScopeGate:
    """403 `forbidden` for a key whose principal lacks the route's scope for the request's method."""

    def __init__(self, app: ASGIApp, scopes: dict[str, Scope | None]) -> None:
        self.app = app
        self._scopes = scopes

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        principal = principal_of(scope)
        needed = self._scopes.get(scope.get("method", "GET"))
        if principal is None or needed is None or principal.may(needed):
            await self.app(scope, receive, send)
            return
        response = error_response(
            403,
            "forbidden",
            f"the key {principal.name!r} lacks the scope {needed.value!r} this route needs; use a key "
            f"with it (JUDGE_API_KEYS_FILE lists each key's scopes)",
            {"scope": needed.value, "key": principal.name},
        )
        await response(scope, receive, send)
