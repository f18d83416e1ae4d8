"""Group assembly: judging a group whose answers arrive one request each (POST /v1/judge/member).

Trainers such as verl, OpenRLHF and NeMo Gym score one sample per call, so no call ever holds a whole
group. Each member request carries its group's key and size; the service holds the members until the
group is complete, judges it once exactly as POST /v1/judge would (stored as one judgement), and
answers every member with its own answer's result and the group's judgement id.

Two strategies, named as JUDGE_MEMBER_ASSEMBLY names them: `local` (local.py, in one process: members of a
group must reach the same process) and `shared` (shared.py, in the store: members may reach any replica or
worker). The rules they share are in common.py:
- The first member fixes the group: conversation, reference, grader, terms, criteria, options, orders,
  run, step and size. A member that differs gets 409 naming the fields. The same answer id with the same
  text again is a retry: it waits with (or gets) the same result; with another text, 409.
- Deadline: `deadline_s` after the first member (its value, else JUDGE_MEMBER_DEADLINE_S), the members
  present are judged together if there are at least `min_members` (default JUDGE_MEMBER_MIN_MEMBERS),
  else each is answered `incomplete`, unscored (never 0).
- A group is judged under an Idempotency-Key derived from its run and key, so once judged it is found in
  the store: a retry of one of its members gets its stored result, and a member arriving after the
  group was judged without it gets 409 with the judgement id, not a judgement of its own.
- Bounded: at most JUDGE_MEMBER_MAX_OPEN_GROUPS groups open and JUDGE_MEMBER_MAX_WAITING members waiting;
  beyond them 429 with Retry-After. At shutdown, waiting members get 503 `shutting_down` (they retry).
Groups are identified per caller (API key) and run: two tenants' groups never meet.

Imports the service, the store protocol, schemas, errors and metrics; imported by api/ and app.py.
"""

from __future__ import annotations

from typing import Literal, Protocol

from judge_service.assembly.local import GroupAssembly
from judge_service.assembly.shared import SharedGroupAssembly
from judge_service.config import MemberAssemblySettings
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import MemberRequest, MemberResponse
from judge_service.service import JudgeService
from judge_service.store.base import JudgementStore


class MemberAssembly(Protocol):  # local.GroupAssembly, shared.SharedGroupAssembly
    """Holds member requests until their group can be judged."""

    async def submit(self, member: MemberRequest, *, caller: str | None) -> MemberResponse: ...

    async def shut_down(self) -> None: ...


def build_assembly(
    strategy: Literal["local", "shared"],
    service: JudgeService,
    store: JudgementStore,
    metrics: JudgeMetrics,
    settings: MemberAssemblySettings,
) -> MemberAssembly:
    if strategy == "shared":
        return SharedGroupAssembly(service, store, metrics, settings)
    return GroupAssembly(service, metrics, settings)


__all__ = ["MemberAssembly", "build_assembly"]
