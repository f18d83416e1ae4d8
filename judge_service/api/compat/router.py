"""Trainer-protocol routes: thin; translation is in openrlhf.py, grouping in assembly/."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from judge_service.api.compat import openrlhf
from judge_service.api.deps import AssemblyDep
from judge_service.api.middleware.auth import caller_of
from judge_service.errors import ConflictError, InvalidGroupError
from judge_service.schemas import MAX_MEMBER_DEADLINE_S, ErrorResponse, MemberResponse

_ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (401, 422, 429, 503)
}

router = APIRouter(prefix="/v1/compat", responses=_ERRORS)
log = logging.getLogger(__name__)


@router.post("/openrlhf", summary="OpenRLHF's remote reward protocol, each sample a member of its group")
async def openrlhf_rewards(
    body: openrlhf.OpenRLHFRequest,
    http: Request,
    assembly: AssemblyDep,
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

    results = await asyncio.gather(*(submit(m) for m in members))
    return openrlhf.reply(list(results), params)
