"""The judge engine's sleep and wake, for a trainer sharing its GPUs (backends/lifecycle.py); admin scope."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Request

from judge_service.backends.lifecycle import EngineLifecycle, EngineStatus
from judge_service.schemas import EngineStatusView, ErrorResponse, SleepRequest

router = APIRouter(prefix="/v1", responses={c: {"model": ErrorResponse} for c in (401, 403, 409, 422, 503)})


def _lifecycle(request: Request) -> EngineLifecycle:
    lifecycle: EngineLifecycle = request.app.state.lifecycle
    return lifecycle


def _view(status: EngineStatus) -> EngineStatusView:
    return EngineStatusView(**asdict(status))


@router.get(
    "/engine", response_model=EngineStatusView, summary="The judge engine's state: awake, asleep, ..."
)
async def engine_status(request: Request) -> EngineStatusView:
    return _view(_lifecycle(request).status())


@router.post(
    "/engine/sleep",
    response_model=EngineStatusView,
    summary="Put the judge's engine to sleep (groups in flight finish first); 409 when it cannot sleep",
)
async def engine_sleep(body: SleepRequest, request: Request) -> EngineStatusView:
    return _view(await _lifecycle(request).sleep(body.level, drain=body.drain))


@router.post("/engine/wake", response_model=EngineStatusView, summary="Wake the judge's engine")
async def engine_wake(request: Request) -> EngineStatusView:
    return _view(await _lifecycle(request).wake())
