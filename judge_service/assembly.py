"""Group assembly: judging a group whose answers arrive one request each (POST /v1/judge/member).

Trainers such as verl, OpenRLHF and NeMo Gym score one sample per call, so no call ever holds a whole
group. Each member request carries its group's key and size; the service holds the members until the
group is complete, judges it once exactly as POST /v1/judge would (stored as one judgement), and
answers every member with its own answer's result and the group's judgement id.

Rules:
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
This assembles groups within one process (JUDGE_MEMBER_ASSEMBLY=local): members of a group must reach the
same process. assembly_shared.py assembles them in the store, across replicas.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from judge_service.errors import ConflictError, OverloadedError, ShuttingDownError
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import (
    AnswerResult,
    JudgeRequest,
    JudgeResponse,
    MemberRequest,
    MemberResponse,
    StoredJudgement,
)
from judge_service.service import JudgeService

log = logging.getLogger(__name__)

INCOMPLETE_KEPT = 10_000  # groups closed incomplete, remembered so late members hear it
ClosedBy = Literal["size", "deadline", "stored"]


class MemberAssembly(Protocol):
    """Holds member requests until their group can be judged: GroupAssembly in one process,
    assembly_shared.SharedGroupAssembly across replicas."""

    async def submit(self, member: MemberRequest, *, caller: str | None) -> MemberResponse: ...

    async def shut_down(self) -> None: ...


@dataclass(frozen=True)
class AssemblySettings:
    deadline_s: float = 60.0
    min_members: int = 2
    max_open_groups: int = 10_000
    max_waiting: int = 100_000


@dataclass
class _OpenGroup:
    caller: str | None
    key: str  # idempotency key of the assembled group (module docstring)
    fixed: dict[str, Any]  # MemberRequest.group_fields() of the first member
    size: int
    min_members: int
    opened: float = field(default_factory=time.monotonic)
    answers: dict[str, str] = field(default_factory=dict)  # answer id -> text
    arrived: dict[str, float] = field(default_factory=dict)  # answer id -> monotonic arrival
    waiting: dict[str, list[asyncio.Future[MemberResponse]]] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None
    closed: bool = False


class GroupAssembly:
    def __init__(self, service: JudgeService, metrics: JudgeMetrics, settings: AssemblySettings) -> None:
        self._service = service
        self._metrics = metrics
        self._settings = settings
        self._open: dict[tuple[str | None, str], _OpenGroup] = {}
        self._waiting = 0
        self._incomplete: OrderedDict[tuple[str | None, str], None] = OrderedDict()
        self._judging: set[asyncio.Task[None]] = set()
        self._shutting_down = False

    async def submit(self, member: MemberRequest, *, caller: str | None) -> MemberResponse:
        """This member's result once its group is judged (module docstring)."""
        if self._shutting_down:
            raise ShuttingDownError("the service is shutting down; send the member again")
        key = group_idempotency_key(member)
        group = self._open.get((caller, key))
        if group is None:
            stored = await self._service.stored_under(key, caller)
            if stored is not None:
                return from_stored(stored, member)
            if (caller, key) in self._incomplete:
                raise ConflictError(
                    f"group {member.group_key!r} closed incomplete at its deadline; its members were "
                    "answered unscored, so this one cannot be judged with them",
                    details={"group_key": member.group_key},
                )
            # Another member may have opened it while the store was asked.
            group = self._open.get((caller, key)) or self._open_group(caller, key, member)
        self._check_same_group(group, member)
        answer = member.answer
        known = group.answers.get(answer.id)
        if known is not None and known != answer.text:
            raise ConflictError(
                f"answer id {answer.id!r} of group {member.group_key!r} was sent with another text; an id "
                "names one answer",
                details={"group_key": member.group_key, "answer_id": answer.id},
            )
        if self._waiting >= self._settings.max_waiting:
            raise OverloadedError(
                f"{self._waiting} members wait for their groups (JUDGE_MEMBER_MAX_WAITING); retry later",
                retry_after_s=1,
            )
        future: asyncio.Future[MemberResponse] = asyncio.get_running_loop().create_future()
        group.waiting.setdefault(answer.id, []).append(future)
        self._waiting += 1
        self._metrics.members_waiting.set(self._waiting)
        if known is None:
            group.answers[answer.id] = answer.text
            group.arrived[answer.id] = time.monotonic()
            if len(group.answers) >= group.size:
                self._close(group, "size")
        try:
            return await future
        finally:
            self._waiting -= 1
            self._metrics.members_waiting.set(self._waiting)

    def _open_group(self, caller: str | None, key: str, member: MemberRequest) -> _OpenGroup:
        if len(self._open) >= self._settings.max_open_groups:
            raise OverloadedError(
                f"{len(self._open)} groups are open (JUDGE_MEMBER_MAX_OPEN_GROUPS); retry later",
                retry_after_s=1,
            )
        deadline_s = member.deadline_s if member.deadline_s is not None else self._settings.deadline_s
        min_members = member.min_members if member.min_members is not None else self._settings.min_members
        fixed = member.group_fields()
        group = _OpenGroup(caller, key, fixed, member.group_size, min(min_members, member.group_size))
        group.timer = asyncio.get_running_loop().call_later(deadline_s, self._close, group, "deadline")
        self._open[(caller, key)] = group
        self._metrics.member_open_groups.set(len(self._open))
        return group

    @staticmethod
    def _check_same_group(group: _OpenGroup, member: MemberRequest) -> None:
        differing = differing_fields(group.fixed, member.group_fields())
        if differing:
            raise ConflictError(
                f"this member of group {member.group_key!r} differs from the group's first member in: "
                f"{', '.join(differing)}; every member of a group sends the same group fields",
                details={"group_key": member.group_key, "differing": differing},
            )

    def _close(self, group: _OpenGroup, reason: Literal["size", "deadline"]) -> None:
        """Stop taking members and judge (or refuse) the group; runs on the event loop, never awaits."""
        if group.closed:
            return
        group.closed = True
        if group.timer is not None:
            group.timer.cancel()
        del self._open[(group.caller, group.key)]
        self._metrics.member_open_groups.set(len(self._open))
        self._metrics.member_groups_closed.labels(reason=reason).inc()
        now = time.monotonic()
        for arrived in group.arrived.values():
            self._metrics.member_wait_seconds.observe(now - arrived)
        if len(group.answers) < group.min_members:
            self._metrics.member_incomplete_groups.inc()
            self._incomplete[(group.caller, group.key)] = None
            while len(self._incomplete) > INCOMPLETE_KEPT:
                self._incomplete.popitem(last=False)
            self._settle(
                group,
                lambda answer_id: incomplete_reply(
                    str(group.fixed["group_key"]),
                    answer_id,
                    present=len(group.answers),
                    size=group.size,
                    min_members=group.min_members,
                ),
            )
            return
        task = asyncio.create_task(self._judge(group, reason))
        self._judging.add(task)
        task.add_done_callback(self._judging.discard)

    async def _judge(self, group: _OpenGroup, reason: ClosedBy) -> None:
        request = JudgeRequest.model_validate(
            {
                **{k: v for k, v in group.fixed.items() if k not in ("group_size",)},
                "answers": [{"id": i, "text": group.answers[i]} for i in sorted(group.answers)],
            }
        )
        try:
            judgement = await self._service.grade(request, idempotency_key=group.key, caller=group.caller)
        except Exception as exc:  # every member gets the group's error, as a single request would
            for futures in group.waiting.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
            return
        by_id = {a.id: a for a in judgement.answers}
        group_key = str(group.fixed["group_key"])
        self._settle(group, lambda answer_id: member_reply(group_key, judgement, by_id[answer_id], reason))

    @staticmethod
    def _settle(group: _OpenGroup, reply: Any) -> None:
        for answer_id, futures in group.waiting.items():
            response = reply(answer_id)
            for future in futures:
                if not future.done():
                    future.set_result(response)

    async def shut_down(self) -> None:
        """Answer every waiting member 503 shutting_down and take no new ones; groups being judged finish."""
        self._shutting_down = True
        for group in list(self._open.values()):
            group.closed = True
            if group.timer is not None:
                group.timer.cancel()
            for futures in group.waiting.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(
                            ShuttingDownError("the service is shutting down; send the member again")
                        )
        self._open.clear()
        self._metrics.member_open_groups.set(0)
        if self._judging:
            await asyncio.gather(*self._judging, return_exceptions=True)


def group_idempotency_key(member: MemberRequest) -> str:
    """The Idempotency-Key an assembled group is judged and stored under: a hash of its run and key
    (visible ASCII without spaces, as a header key; the caller qualifies it as for any key)."""
    digest = hashlib.sha256(f"{member.run_id or ''}\n{member.group_key}".encode()).hexdigest()[:40]
    return f"member-{digest}"


def differing_fields(fixed: dict[str, Any], sent: dict[str, Any]) -> list[str]:
    """The group fields in which a member differs from its group's first member."""
    return sorted(name for name, value in fixed.items() if sent.get(name) != value)


def incomplete_reply(
    group_key: str, answer_id: str, *, present: int, size: int, min_members: int
) -> MemberResponse:
    reason = (
        f"incomplete: {present} of {size} members arrived before the group's deadline, fewer than the "
        f"{min_members} needed to judge them together"
    )
    return MemberResponse(
        group_key=group_key,
        judgement_id=None,
        answer=AnswerResult(id=answer_id, status="unscored", score=None, error=reason),
        group_status="incomplete",
        members=present,
        closed_by="deadline",
    )


def member_reply(
    group_key: str, judgement: JudgeResponse, answer: AnswerResult, reason: ClosedBy
) -> MemberResponse:
    return MemberResponse(
        group_key=group_key,
        judgement_id=judgement.judgement_id,
        answer=answer,
        group_status=judgement.status,
        members=len(judgement.answers),
        closed_by=reason,
    )


def from_stored(stored: StoredJudgement, member: MemberRequest) -> MemberResponse:
    """A member of a group already judged and stored: its result if it was judged, else 409."""
    texts = {a.id: a.text for a in stored.request.answers}
    answer_id = member.answer.id
    if answer_id not in texts:
        raise ConflictError(
            f"group {member.group_key!r} was already judged without answer {answer_id!r} (judgement "
            f"{stored.judgement_id}, {len(texts)} members); a late member is not judged alone",
            details={"judgement_id": stored.judgement_id, "group_key": member.group_key},
        )
    if texts[answer_id] != member.answer.text:
        raise ConflictError(
            f"answer id {answer_id!r} of group {member.group_key!r} was judged with another text",
            details={"judgement_id": stored.judgement_id, "answer_id": answer_id},
        )
    answer = next(a for a in stored.answers if a.id == answer_id)
    return MemberResponse(
        group_key=member.group_key,
        judgement_id=stored.judgement_id,
        answer=answer,
        group_status=stored.status,
        members=len(stored.answers),
        closed_by="stored",
    )
