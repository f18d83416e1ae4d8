"""Judge-quality routes: calibration, agreement with human labels, regrading. Thin: work is in quality/."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from judge_service.api.auth import caller_of
from judge_service.api.deps import ServiceDep
from judge_service.api.headers import idempotency_key_header
from judge_service.errors import InvalidGroupError, NotFoundError
from judge_service.quality.agreement import AgreementReport, agreement
from judge_service.quality.calibration import CalibrationReport, calibrate
from judge_service.quality.sources import JudgementGetter, index_for_labels, run_groups
from judge_service.schemas import (
    AgreementRequest,
    CalibrationRequest,
    ErrorResponse,
    RegradeRequest,
    RegradeResponse,
)
from judge_service.service import JudgeService

_ERRORS: dict[int | str, dict[str, object]] = {code: {"model": ErrorResponse} for code in (404, 422, 503)}

router = APIRouter(prefix="/v1", responses=_ERRORS)

RegradeIdempotencyKeyHeader = Annotated[
    str | None,
    idempotency_key_header(
        "Retry safely, per group: a regrade repeated with the same key returns the groups already "
        "re-scored under it (same judgement_ids) and re-scores only the others; other overrides for the "
        "same group under the same key get a 409 `conflict` in its result slot."
    ),
]


@router.post("/quality/calibration", response_model=CalibrationReport, summary="Pass rates and a threshold")
async def calibration(request: CalibrationRequest, service: ServiceDep) -> CalibrationReport:
    if request.groups is not None:
        return calibrate(request.groups)
    groups = await run_groups(
        service, request.run_id or "", step=request.step, fingerprint=request.fingerprint
    )
    return calibrate(groups)


@router.post("/quality/agreement", response_model=AgreementReport, summary="Agreement with human labels")
async def agreement_report(request: AgreementRequest, service: ServiceDep) -> AgreementReport:
    try:
        if request.scores is not None:
            inline = request.scores
            found = [(label, inline.get(label.key)) for label in request.human]
        else:
            index = await index_for_labels(
                request.human,
                get=_stored_getter(service),
                lister=service,
                run_id=request.run_id,
                step=request.step,
                fingerprint=request.fingerprint,
            )
            found = [(label, index.find(label)) for label in request.human]
        if request.scale is not None and not request.scale[0] < request.scale[1]:
            raise ValueError(f"scale must be (lowest, highest) with lowest < highest, got {request.scale}")
        return agreement(found, default_scale=request.scale or (0.0, 1.0))
    except ValueError as exc:
        raise InvalidGroupError(str(exc)) from exc


def _stored_getter(service: JudgeService) -> JudgementGetter:
    async def get(judgement_id: str) -> dict[str, Any] | None:
        try:
            return (await service.get(judgement_id)).model_dump(mode="json")
        except NotFoundError:
            return None

    return get


@router.post(
    "/regrade",
    response_model=RegradeResponse,
    summary="Re-score stored groups under another grader configuration; new judgements link to the old",
)
async def regrade(
    request: RegradeRequest,
    http: Request,
    service: ServiceDep,
    idempotency_key: RegradeIdempotencyKeyHeader = None,
) -> RegradeResponse:
    return await service.regrade(request, idempotency_key=idempotency_key, caller=caller_of(http.scope))
