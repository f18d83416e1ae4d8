"""POST /v1/prune: delete stored judgements by age (and run), as retention does in the background."""

from __future__ import annotations

from fastapi import APIRouter

from judge_service.api.deps import RetentionDep
from judge_service.schemas import ErrorResponse, PruneReport, PruneRequest

router = APIRouter(prefix="/v1", responses={c: {"model": ErrorResponse} for c in (401, 403, 409, 422, 503)})


@router.post(
    "/prune",
    response_model=PruneReport,
    summary="Delete judgements created before a time (of one run), in batches; labelled ones are kept",
)
async def prune(request: PruneRequest, retention: RetentionDep) -> PruneReport:
    return await retention.prune(
        request.before,
        run_id=request.run_id,
        include_labelled=request.include_labelled,
        max_judgements=request.max_judgements,
    )
