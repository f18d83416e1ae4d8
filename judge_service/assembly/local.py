"""Group assembly in one process (JUDGE_MEMBER_ASSEMBLY=local): members of a group must reach the same
process. Open groups live in memory, each with a deadline timer; the rules are the package's (common.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from judge_service.assembly import common
from judge_service.assembly.common import ClosedBy
from judge_service.config import MemberAssemblySettings
from judge_service.errors import ConflictError
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import MemberRequest, MemberResponse
from judge_service.service import JudgeService

log = logging.getLogger(__name__)

INCOMPLETE_KEPT = 10_000  # groups closed incomplete, remembered so late members hear it


@dataclass
class _OpenGroup:
    caller: str | None
    key: str  # idempotency key of the assembled group (module docstring)
    fixed: dict[str, Any]  # MemberRequest.group_fields() of the first member
    size: int
    min_members: int
    opened: float = field(default_factory=time.monotonic)
    answers: dict[str, str] = field(default_factory=dict)  # answer id -> the answer as held (common.held)
    arrived: dict[str, float] = field(default_factory=dict)  # answer id -> monotonic arrival
    waiting: dict[str, list[asyncio.Future[MemberResponse]]] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None
    closed: bool = False


class GroupAssembly:
    def __init__(
        self, service: JudgeService, metrics: JudgeMetrics, settings: MemberAssemblySettings
    ) -> None:
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
            raise common.shutting_down()
        key = common.group_idempotency_key(member)
        group = self._open.get((caller, key))
        if group is None:
            stored = await self._service.stored_under(key, caller)
            if stored is not None:
                return common.from_stored(stored, member)
            if (caller, key) in self._incomplete:
                raise ConflictError(
                    f"group {member.group_key!r} closed incomplete at its deadline; its members were "
                    "answered unscored, so this one cannot be judged with them",
                    details={"group_key": member.group_key},
                )
            # Another member may have opened it while the store was asked.
            group = self._open.get((caller, key)) or self._open_group(caller, key, member)
        answer = member.answer
        known = group.answers.get(answer.id)
        common.check_member(group.fixed, known, member)
        common.admit_member(self._settings, self._waiting)
        future: asyncio.Future[MemberResponse] = asyncio.get_running_loop().create_future()
        group.waiting.setdefault(answer.id, []).append(future)
        self._waiting += 1
        self._metrics.members_waiting.set(self._waiting)
        if known is None:
            group.answers[answer.id] = common.held(answer)
            group.arrived[answer.id] = time.monotonic()
            if len(group.answers) >= group.size:
                self._close(group, "size")
        try:
            return await future
        finally:
            self._waiting -= 1
            self._metrics.members_waiting.set(self._waiting)

    def _open_group(self, caller: str | None, key: str, member: MemberRequest) -> _OpenGroup:
        common.admit_group(self._settings, len(self._open))
        deadline_s, min_members = common.deadline_and_minimum(member, self._settings)
        group = _OpenGroup(caller, key, member.group_fields(), member.group_size, min_members)
        group.timer = asyncio.get_running_loop().call_later(deadline_s, self._close, group, "deadline")
        self._open[(caller, key)] = group
        self._metrics.member_open_groups.set(len(self._open))
        return group

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
                lambda answer_id: common.incomplete_reply(
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
        request = common.group_request(group.fixed, group.answers)
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
        self._settle(
            group, lambda answer_id: common.member_reply(group_key, judgement, by_id[answer_id], reason)
        )

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
                        future.set_exception(common.shutting_down())
        self._open.clear()
        self._metrics.member_open_groups.set(0)
        if self._judging:
            await asyncio.gather(*self._judging, return_exceptions=True)
