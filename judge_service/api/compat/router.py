"""Compatibility routes: thin. OpenRLHF's remote reward protocol (translation in openrlhf.py, grouping in
assembly/), and the hosted fine-tuning API's grader run and validate (shapes in rft.py, running in
judging/rft/)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from judge_service.api.compat import openrlhf, rft
from judge_service.api.deps import AssemblyDep, RftRunnerDep, SharesDep
from judge_service.api.middleware.auth import caller_of, principal_of
from judge_service.api.middleware.keys import Scope
from judge_service.errors import ConflictError, ForbiddenError, InvalidGroupError
from judge_service.judging.llm.admission import ADMISSION_KEY
from judge_service.judging.rft.models import runs_python
from judge_service.judging.rft.run import GraderConfigError, PythonNotAllowed
from judge_service.schemas import MAX_MEMBER_DEADLINE_S, ErrorResponse, MemberResponse

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (401, 422, 429, 503)
}

router = APIRouter(prefix="/v1/compat", responses=_ERRORS)
fine_tuning = APIRouter(
    prefix="/v1/fine_tuning/alpha/graders",
    responses={code: {"model": ErrorResponse} for code in (401, 403, 422)},
)
log = logging.getLogger(__name__)


@router.post("/openrlhf", summary="OpenRLHF's remote reward protocol, each sample a member of its group")
async def openrlhf_rewards(
    body: openrlhf.OpenRLHFRequest,
    http: Request,
    assembly: AssemblyDep,
    shares: SharesDep,
    group_size: Annotated[int, Query(ge=1, le=64, description="Answers per prompt (n_samples_per_prompt).")],
    grader: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    run_id: Annotated[str | None, Query(max_length=128)] = None,
    deadline_s: Annotated[float | None, Query(gt=0, le=MAX_MEMBER_DEADLINE_S)] = None,
    min_members: Annotated[int | None, Query(ge=1, le=64)] = None,
    fallback: Annotated[float, Query(description="Reward of an answer the judge could not score.")] = 0.0,
) -> dict[str, Any]:
    params = openrlhf.OpenRLHFParams(
        group_size=group_size,
        grader=grader,
        run_id=run_id,
        deadline_s=deadline_s,
        min_members=min_members,
        fallback=fallback,
    )
    try:
        members = openrlhf.members(body, params)
    except ValueError as exc:
        raise InvalidGroupError(str(exc)) from exc
    caller = caller_of(http.scope)

    async def submit(member: Any) -> MemberResponse | None:
        try:
            return await assembly.submit(member, caller=caller)
        except ConflictError as exc:  # OpenRLHF needs a number: the fallback, counted as not ok
            log.warning("openrlhf sample answered with the fallback reward: %s", exc.message)
            return None

    async with shares.hold(principal_of(http.scope), len(members) / group_size):
        results = await asyncio.gather(*(submit(m) for m in members))
    return openrlhf.reply(list(results), params)


@fine_tuning.post("/run", summary="Run an RFT grader config on one sample (the hosted API's shape)")
async def run_grader(
    body: rft.GraderRunRequest, http: Request, runner: RftRunnerDep, shares: SharesDep
) -> dict[str, Any]:
    _check_python(body.grader, http, runner.allow_python)
    async with shares.hold(principal_of(http.scope), 1):
        outcome = await runner.run(body.grader, body.model_sample, body.item or {})
    return rft.run_reply(body.grader, outcome)


@fine_tuning.post("/validate", summary="Check an RFT grader config without running it")
async def validate_grader(
    body: rft.GraderValidateRequest, http: Request, runner: RftRunnerDep
) -> dict[str, Any]:
    _check_python(body.grader, http, runner.allow_python)
    turn = ADMISSION_KEY.set(caller_of(http.scope) or "")  # its templates check in the key's turn
    try:
        await runner.validate(body.grader)
    except PythonNotAllowed as exc:
        raise ForbiddenError(str(exc)) from exc
    except GraderConfigError as exc:
        raise InvalidGroupError(str(exc), details={"flag": exc.flag}) from exc
    finally:
        ADMISSION_KEY.reset(turn)
    return {"grader": body.grader.model_dump(mode="json", exclude_none=True)}


def _check_python(grader: Any, http: Request, allowed: bool) -> None:
    """Inline python is code of the caller's: the operator must allow it, and the key must hold the
    `python` scope (or `admin`), which a trainer's `judge` key does not. Keys off: allowed is enough."""
    if not runs_python(grader):
        return
    if not allowed:
        raise ForbiddenError(str(PythonNotAllowed()))
    principal = principal_of(http.scope)
    if principal is not None and not (principal.may(Scope.PYTHON) or principal.may(Scope.ADMIN)):
        raise ForbiddenError(
            f"the key {principal.name!r} lacks the scope 'python' that python graders need (their source "
            "is code, run in the sandbox); use a key with the python or admin scope (JUDGE_API_KEYS_FILE)",
            details={"scope": "python", "key": principal.name},
        )
