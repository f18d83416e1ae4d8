"""Judge-quality routes: calibration, human labels and agreement with them, regrading. Thin: work is in
quality/."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse

from judge_service.api.deps import JudgementId, RunId, ServiceDep
from judge_service.api.headers import idempotency_key_header
from judge_service.api.middleware.auth import caller_of, principal_of
from judge_service.api.middleware.keys import Scope
from judge_service.errors import InvalidGroupError, NotFoundError
from judge_service.quality.agreement import AgreementReport, agreement
from judge_service.quality.calibration import CalibrationReport, calibrate
from judge_service.quality.labels import labeler_for, labels_for
from judge_service.quality.sources import JudgementGetter, index_for_labels, run_agreement_report, run_groups
from judge_service.schemas import (
    AgreementRequest,
    CalibrationRequest,
    ErrorResponse,
    FingerprintAgreement,
    LabelsRequest,
    RegradeRequest,
    RegradeResponse,
    StoredLabels,
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


@router.put(
    "/judgements/{judgement_id}/labels",
    response_model=StoredLabels,
    summary="Store a person's marks or ranks for a judged group's answers (replacing that person's earlier)",
)
async def put_labels(
    judgement_id: JudgementId, request: LabelsRequest, http: Request, service: ServiceDep
) -> StoredLabels:
    principal = principal_of(http.scope)
    key = None if principal is None else principal.name
    labeler = labeler_for(request.labeler, key, admin=principal is not None and principal.may(Scope.ADMIN))
    judgement = await service.get(judgement_id)
    await service.save_labels(labels_for(judgement, request, labeler=labeler), run_id=judgement.run_id)
    return StoredLabels(items=await service.labels_of(judgement_id))


@router.get(
    "/judgements/{judgement_id}/labels", response_model=StoredLabels, summary="A group's human labels"
)
async def get_labels(judgement_id: JudgementId, service: ServiceDep) -> StoredLabels:
    await service.get(judgement_id)  # 404 for an unknown judgement, not an empty list
    return StoredLabels(items=await service.labels_of(judgement_id))


@router.get(
    "/runs/{run_id}/labels",
    response_model=StoredLabels,
    summary="A run's human labels; format=jsonl gives the file `judge-service agreement --human` reads",
    responses={200: {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}}},
)
async def run_labels(
    run_id: RunId,
    service: ServiceDep,
    format: Annotated[str, Query(pattern=r"^(json|jsonl)$")] = "json",
) -> StoredLabels | PlainTextResponse:
    labels = await service.run_labels(run_id)
    if format == "jsonl":
        body = "".join(label.model_dump_json(exclude_none=True) + "\n" for label in labels)
        return PlainTextResponse(body, media_type="application/x-ndjson")
    return StoredLabels(items=labels)


@router.get(
    "/runs/{run_id}/agreement",
    response_model=list[FingerprintAgreement],
    summary="How well each grader fingerprint agrees with the run's human labels",
)
async def run_agreement(run_id: RunId, service: ServiceDep) -> list[FingerprintAgreement]:
    return await run_agreement_report(service, run_id)
