"""Typed access to the objects app.py builds (kept on app.state; no module-level singletons).

The providers are async on purpose: FastAPI runs sync dependencies in a thread pool, a hop per request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar, cast

from fastapi import Depends, Path, Request

from judge_service.api.middleware.keys import KeyRing
from judge_service.api.shares import KeyShares
from judge_service.assembly import MemberAssembly
from judge_service.judging.rft.run import RftRunner
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import MAX_STEP, RUN_ID_PATTERN
from judge_service.service import JudgeService
from judge_service.service.retention import Retention

T = TypeVar("T")


def _app_state(name: str, kind: type[T]) -> Callable[[Request], Awaitable[T]]:
    """A dependency giving the object app.py keeps on app.state under `name`."""

    async def provide(request: Request) -> T:
        return cast(T, getattr(request.app.state, name))

    provide.__name__ = f"app_state_{name}"
    return provide


def service_of(request: Request) -> JudgeService:
    """The service, for the judging routes: read straight from app.state, where a dependency would cost
    FastAPI a resolution per request on the hottest routes."""
    return cast(JudgeService, request.app.state.service)


def shares_of(request: Request) -> KeyShares:
    return cast(KeyShares, request.app.state.shares)


def assembly_of(request: Request) -> MemberAssembly:
    return cast(MemberAssembly, request.app.state.assembly)


ServiceDep = Annotated[JudgeService, Depends(_app_state("service", JudgeService))]
MetricsDep = Annotated[JudgeMetrics, Depends(_app_state("metrics", JudgeMetrics))]
AssemblyDep = Annotated[MemberAssembly, Depends(_app_state("assembly", MemberAssembly))]
RftRunnerDep = Annotated[RftRunner, Depends(_app_state("rft_runner", RftRunner))]
# The API keys, and the page sessions they sign.
KeysDep = Annotated[KeyRing, Depends(_app_state("keys", KeyRing))]
RetentionDep = Annotated[Retention, Depends(_app_state("retention", Retention))]
# Each key's fair share of this process (api/shares.py).
SharesDep = Annotated[KeyShares, Depends(_app_state("shares", KeyShares))]

# Path parameters the JSON routes and the pages share.
JudgementId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="judgement_id from a judge reply")]
RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN)]
StepNumber = Annotated[int, Path(ge=0, le=MAX_STEP)]
