"""Liveness, readiness and Prometheus exposition."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from judge_service.api.deps import MetricsDep, ServiceDep

router = APIRouter()


@router.get("/healthz", summary="The process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "alive"}


@router.get("/readyz", summary="The judge model is loaded and requests will be graded")
async def readyz(service: ServiceDep, response: Response, request: Request) -> dict[str, str]:
    if request.app.state.drain.draining:
        response.status_code = 503
        return {"status": "draining"}
    if not service.judge_ready:
        response.status_code = 503
        if service.load_error:
            return {"status": "failed", "error": service.load_error}
        return {"status": "loading"}
    return {"status": "ready"}


@router.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
async def metrics(metrics: MetricsDep) -> Response:
    return Response(content=metrics.render(), media_type=CONTENT_TYPE_LATEST)
