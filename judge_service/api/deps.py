"""Typed access to the objects app.py builds (kept on app.state; no module-level singletons).

The providers are async on purpose: FastAPI runs sync dependencies in a thread pool, a hop per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from judge_service.api.middleware.auth import KeyRing
from judge_service.assembly import MemberAssembly
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import MAX_STEP, RUN_ID_PATTERN
from judge_service.service import JudgeService


async def _service(request: Request) -> JudgeService:
    service: JudgeService = request.app.state.service
    return service


async def _assembly(request: Request) -> MemberAssembly:
    assembly: MemberAssembly = request.app.state.assembly
    return assembly


async def _metrics(request: Request) -> JudgeMetrics:
    metrics: JudgeMetrics = request.app.state.metrics
    return metrics


async def _keys(request: Request) -> KeyRing:
    keys: KeyRing = request.app.state.keys
    return keys


ServiceDep = Annotated[JudgeService, Depends(_service)]
MetricsDep = Annotated[JudgeMetrics, Depends(_metrics)]
AssemblyDep = Annotated[MemberAssembly, Depends(_assembly)]
KeysDep = Annotated[KeyRing, Depends(_keys)]  # the API keys, and the page sessions they sign

# Path parameters the JSON routes and the pages share.
JudgementId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="judgement_id from a judge reply")]
RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN)]
StepNumber = Annotated[int, Path(ge=0, le=MAX_STEP)]
