"""Liveness, readiness and Prometheus exposition."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from judge_service.api.deps import MetricsDep
from judge_service.api.middleware.auth import bearer_token
from judge_service.api.middleware.keys import KeyRing, Scope
from judge_service.api.paths import LIVENESS, METRICS, READINESS
from judge_service.backends.lifecycle import VERIFY_FAILED
from judge_service.backends.readiness import Readiness
from judge_service.errors import StoreUnavailableError
from judge_service.judging.jury.grader import JuryGrader
from judge_service.redaction import redact
from judge_service.store.base import JudgementStore

router = APIRouter()


@router.get(LIVENESS, summary="The process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "alive"}


@router.get(READINESS, summary="The judge model is loaded and requests will be graded")
async def readyz(response: Response, request: Request) -> dict[str, Any]:
    """ready; loading; draining (shutting down); asleep, engine_draining, engine_waking, engine_failed
    (POST /v1/engine/sleep, backends/lifecycle.py); unavailable (the judge endpoint does not answer its
    health check); failed (the backend could not start, or the in-process engine died); with a jury,
    jury_unavailable (fewer of its judges ready than JUDGE_JURY_QUORUM; `jury` says each one's state); with
    JUDGE_READY_REQUIRES_STORE, store_unavailable (the judgement database does not answer): all but ready
    503. Why (`error`: endpoint URLs, the upstream's own error text) only for a key with the read scope."""
    readiness: Readiness = request.app.state.readiness
    if request.app.state.drain.draining:
        response.status_code = 503
        return {"status": "draining", "backend": readiness.backend}
    lifecycle = request.app.state.lifecycle
    engine = lifecycle.state
    if engine != "awake":  # asleep for a trainer: a router sends the work elsewhere
        response.status_code = 503
        status = "asleep" if engine == "asleep" else f"engine_{engine}"
        if engine == "failed" and (lifecycle.status().error or "").startswith(VERIFY_FAILED):
            status = VERIFY_FAILED  # woken, but it marks its probe groups otherwise than before
        return {"status": status, "backend": readiness.backend}
    if not readiness.ready:
        response.status_code = 503
    body: dict[str, Any] = {"status": readiness.state, "backend": readiness.backend}
    jury: JuryGrader | None = request.app.state.jury
    if jury is not None:  # each judge's state; too few ready for the quorum: not ready
        body["jury"] = {"quorum": jury.quorum, "judges": jury.states()}
        if readiness.ready and not jury.ready:
            response.status_code = 503
            body["status"] = "jury_unavailable"
    if readiness.error is not None:
        body["error"] = readiness.error
    elif readiness.ready and request.app.state.settings.ready_requires_store:
        problem = await _store_problem(request)
        if problem is not None:
            response.status_code = 503
            body = {"status": "store_unavailable", "backend": readiness.backend, "error": problem}
    if "error" in body:
        if _may_see_why(request):
            body["error"] = redact(body["error"])
        else:
            del body["error"]
    return body


def _may_see_why(request: Request) -> bool:
    """Whether the caller's key has the read scope. /readyz stays public for probes, which need only the
    status; without keys nobody qualifies, as the route is then open to anything that reaches the port (a
    page's DNS rebinding included): the log says why instead."""
    keys: KeyRing = request.app.state.keys
    if not keys.enabled:
        return False
    token = bearer_token(request.scope)
    principal = keys.principal_for(token) if token is not None else None
    return principal is not None and principal.may(Scope.READ)


async def _store_problem(request: Request) -> str | None:
    """Why the judgement database cannot be used now, or None when it answers in time."""
    store: JudgementStore = request.app.state.store
    timeout_s = request.app.state.settings.ready_store_timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            await store.ping()
    except TimeoutError:
        return f"the judgement database did not answer within {timeout_s:g} s"
    except StoreUnavailableError as exc:
        return exc.message
    return None


@router.get(METRICS, summary="Prometheus metrics", response_class=PlainTextResponse)
async def metrics(metrics: MetricsDep) -> Response:
    return Response(content=metrics.render(), media_type=CONTENT_TYPE_LATEST)
