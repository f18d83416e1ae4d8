"""Judge-quality routes: regrading stored groups. Thin: the work is in the service and quality/."""

from __future__ import annotations

from fastapi import APIRouter

from judge_service.api.deps import ServiceDep
from judge_service.quality.regrade import RegradeRequest, RegradeResponse
from judge_service.schemas import ErrorResponse

_ERRORS: dict[int | str, dict[str, object]] = {code: {"model": ErrorResponse} for code in (404, 422, 503)}

router = APIRouter(prefix="/v1", responses=_ERRORS)


@router.post(
    "/regrade",
    response_model=RegradeResponse,
    summary="Re-score stored groups under another grader configuration; new judgements link to the old",
)
async def regrade(request: RegradeRequest, service: ServiceDep) -> RegradeResponse:
    return await service.regrade(request)
