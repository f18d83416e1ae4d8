"""Judging and judgement routes. Thin: validation is in schemas, work is in the service."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from judge_service.api.deps import (
    JudgementId,
    RunId,
    ServiceDep,
    SharesDep,
    assembly_of,
    service_of,
    shares_of,
)
from judge_service.api.headers import idempotency_key_header
from judge_service.api.json_route import post_json
from judge_service.api.middleware.auth import caller_of, principal_of
from judge_service.schemas import (
    MAX_JUDGEMENTS_PAGE,
    MAX_RUNS_PAGE,
    MAX_STEP,
    MAX_STEPS_PAGE,
    RUBRIC_ID_PATTERN,
    RUN_ID_PATTERN,
    AuditRecord,
    BatchJudgeRequest,
    BatchJudgeResponse,
    ErrorResponse,
    ExplainedReasons,
    GraderList,
    JudgementPage,
    JudgeRequest,
    JudgeResponse,
    MemberRequest,
    MemberResponse,
    Rubric,
    RubricEdit,
    RubricRequest,
    RunPage,
    RunSteps,
    StoredJudgement,
)

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (401, 404, 409, 413, 422, 429, 502, 503, 504)
}

router = APIRouter(prefix="/v1", responses=_ERRORS)


IdempotencyKeyHeader = Annotated[
    str | None,
    idempotency_key_header(
        "Retry safely: a request repeated with the same key and body returns the stored judgement (same "
        "judgement_id) without judging again; the same key with another body is 409."
    ),
]
BatchIdempotencyKeyHeader = Annotated[
    str | None,
    idempotency_key_header(
        "Retry safely, per group: a batch repeated with the same key returns the groups already stored "
        "(same judgement_ids) and judges only the others (e.g. those that failed); a different group at "
        "an index gets a 409 `conflict` in its result slot."
    ),
]


@post_json(router, "/judge", response_model=JudgeResponse, summary="Grade one group of answers")
async def judge(
    request: JudgeRequest, http: Request, idempotency_key: IdempotencyKeyHeader = None
) -> JudgeResponse:
    principal = principal_of(http.scope)
    if principal is None:  # keys off: no share to hold
        return await service_of(http).grade(request, idempotency_key=idempotency_key)
    async with shares_of(http).hold(principal, 1):
        return await service_of(http).grade(request, idempotency_key=idempotency_key, caller=principal.name)


@post_json(
    router, "/judge/batch", response_model=BatchJudgeResponse, summary="Grade many groups in one request"
)
async def judge_batch(
    request: BatchJudgeRequest, http: Request, idempotency_key: BatchIdempotencyKeyHeader = None
) -> BatchJudgeResponse:
    async with shares_of(http).hold(principal_of(http.scope), len(request.groups)):
        results = await service_of(http).grade_batch(
            request.groups, idempotency_key=idempotency_key, caller=caller_of(http.scope)
        )
    return BatchJudgeResponse(results=results)


@post_json(
    router,
    "/judge/member",
    response_model=MemberResponse,
    summary="One answer of a group, for trainers that score one sample at a time; answered when its "
    "group has been judged",
)
async def judge_member(request: MemberRequest, http: Request) -> MemberResponse:
    async with shares_of(http).hold(principal_of(http.scope), 1 / request.group_size):
        return await assembly_of(http).submit(request, caller=caller_of(http.scope))


@router.get(
    "/graders", response_model=GraderList, summary="Every grader and blend, with its kind and fingerprint"
)
async def list_graders(service: ServiceDep) -> GraderList:
    return GraderList(items=service.graders())


@router.get("/judgements/{judgement_id}", response_model=StoredJudgement, summary="One stored judgement")
async def get_judgement(judgement_id: JudgementId, service: ServiceDep) -> StoredJudgement:
    return await service.get(judgement_id)


@router.post(
    "/judgements/{judgement_id}/reasons",
    response_model=ExplainedReasons,
    summary="Write reasons for a marks-only judgement's marks; the marks and scores never change",
)
async def explain_judgement(judgement_id: JudgementId, service: ServiceDep) -> ExplainedReasons:
    return await service.explain(judgement_id)


@router.get(
    "/judgements/{judgement_id}/audit",
    response_model=AuditRecord,
    summary="How the audit judge (JUDGE_AUDIT) scored a judgement's answers; 404 when it was not audited",
)
async def get_audit(judgement_id: JudgementId, service: ServiceDep) -> AuditRecord:
    return await service.audit_of(judgement_id)


@router.get("/runs/{run_id}/judgements", response_model=JudgementPage, summary="A run's judgements, paged")
async def list_run_judgements(
    run_id: RunId,
    service: ServiceDep,
    step: Annotated[int | None, Query(ge=0, le=MAX_STEP)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_JUDGEMENTS_PAGE)] = 100,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
) -> JudgementPage:
    return await service.list_run(run_id, step=step, limit=limit, cursor=cursor)


@router.get("/runs", response_model=RunPage, summary="Every run with its totals, by run id, paged")
async def list_runs(
    service: ServiceDep,
    limit: Annotated[int, Query(ge=1, le=MAX_RUNS_PAGE)] = 50,
    cursor: Annotated[str | None, Query(pattern=RUN_ID_PATTERN, description="next_cursor of a page")] = None,
) -> RunPage:
    return await service.list_runs(limit=limit, cursor=cursor)


@router.get(
    "/runs/{run_id}/steps", response_model=RunSteps, summary="A run's figures per step, by step, paged"
)
async def run_steps(
    run_id: RunId,
    service: ServiceDep,
    from_step: Annotated[int | None, Query(alias="from", ge=0, le=MAX_STEP)] = None,
    to_step: Annotated[int | None, Query(alias="to", ge=0, le=MAX_STEP)] = None,
    fingerprint: Annotated[str | None, Query(pattern=r"^[0-9a-f]{1,64}$")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_STEPS_PAGE)] = 1000,
    cursor: Annotated[
        str | None, Query(pattern=r"^[0-9]{1,19}$", description="next_cursor of a page")
    ] = None,
) -> RunSteps:
    after = max(-1 if from_step is None else from_step - 1, -1 if cursor is None else int(cursor))
    return await service.run_steps(run_id, after=after, until=to_step, fingerprint=fingerprint, limit=limit)


RubricId = Annotated[str, Path(pattern=RUBRIC_ID_PATTERN, description="rb_ and 24 hex digits")]


@router.post(
    "/rubrics",
    response_model=Rubric,
    summary="Have the judge write a checklist rubric for a conversation and reference, or get the stored one",
)
async def write_rubric(
    request: RubricRequest, http: Request, service: ServiceDep, shares: SharesDep
) -> Rubric:
    async with shares.hold(principal_of(http.scope), 1):
        return await service.rubrics.write(request)


@router.get("/rubrics/{rubric_id}", response_model=Rubric, summary="A rubric: its latest version, or one")
async def get_rubric(
    rubric_id: RubricId,
    service: ServiceDep,
    version: Annotated[int | None, Query(ge=1, le=999_999, description="Default: the latest")] = None,
) -> Rubric:
    return await service.rubrics.get(rubric_id, version)


@router.put(
    "/rubrics/{rubric_id}",
    response_model=Rubric,
    summary="Store edited items as the rubric's next version (earlier versions stay)",
)
async def edit_rubric(rubric_id: RubricId, edit: RubricEdit, service: ServiceDep) -> Rubric:
    return await service.rubrics.edit(rubric_id, edit)
