"""Group assembly across replicas: the members of one group may reach different processes behind a plain
load balancer and are still judged together, once.

Same rules as local.py (common.py: first member fixes the group, deadline, min_members, 409s, caller
scoping);
what differs is where a group lives: in the store (store/base.py `join_group`), so every replica sees
every member. A member's path:

1. Its group was judged already: its result from the stored judgement (or 409 for a late member).
2. It joins the group in one store transaction, which also closes the group when it is full. Every
   replica then sees the same frozen member set.
3. Until the group is closed, the member waits, re-reading the group (POLL_S); at the deadline (on the
   database's clock) any waiting replica closes it.
4. Once closed, every replica with a waiting member asks the service to judge the frozen group under the
   group's Idempotency-Key: the first claims the key and judges, the others wait for and replay its
   stored judgement (service/idempotency.py), and if the judging replica dies, its lease lapses and another
   takes over. Fewer members than min_members: each is answered `incomplete`, unscored.

Closed groups are forgotten after PRUNE_AFTER_S (their judgements stay and answer retries).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from judge_service.assembly import common
from judge_service.assembly.common import ClosedBy
from judge_service.config import MemberAssemblySettings
from judge_service.errors import ConflictError
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import MemberRequest, MemberResponse, canonical_json
from judge_service.service import JudgeService
from judge_service.service.idempotency import ScopedKey
from judge_service.store.base import JudgementStore, MemberJoin

log = logging.getLogger(__name__)

POLL_S = 0.05  # first re-read of a waiting member's group; doubles up to POLL_MAX_S
POLL_MAX_S = 0.25
PRUNE_AFTER_S = 24 * 3600.0
PRUNE_EVERY_S = 600.0


class SharedGroupAssembly:
    def __init__(
        self,
        service: JudgeService,
        store: JudgementStore,
        metrics: JudgeMetrics,
        settings: MemberAssemblySettings,
    ) -> None:
        self._service = service
        self._store = store
        self._metrics = metrics
        self._settings = settings
        self._waiting = 0
        self._open: dict[str, int] = {}  # groups with members waiting in this process -> how many
        self._shutting_down = False
        self._stopped = asyncio.Event()
        self._pruned_at = time.monotonic()

    async def submit(self, member: MemberRequest, *, caller: str | None) -> MemberResponse:
        if self._shutting_down:
            raise common.shutting_down()
        key = common.group_idempotency_key(member)
        stored = await self._service.stored_under(key, caller)
        if stored is not None:
            return common.from_stored(stored, member)
        group_key = ScopedKey(key, caller).stored  # two tenants' groups never meet
        common.admit_member(self._settings, self._waiting)
        if group_key not in self._open:
            common.admit_group(self._settings, len(self._open))
        self._waiting += 1
        self._open[group_key] = self._open.get(group_key, 0) + 1
        self._metrics.members_waiting.set(self._waiting)
        self._metrics.member_open_groups.set(len(self._open))
        try:
            return await self._submit(member, key, group_key, caller)
        finally:
            self._waiting -= 1
            self._open[group_key] -= 1
            if not self._open[group_key]:
                del self._open[group_key]
            self._metrics.members_waiting.set(self._waiting)
            self._metrics.member_open_groups.set(len(self._open))

    async def _submit(
        self, member: MemberRequest, key: str, group_key: str, caller: str | None
    ) -> MemberResponse:
        fields = member.group_fields()
        deadline_s, min_members = common.deadline_and_minimum(member, self._settings)
        joined_at = time.monotonic()
        group = await self._store.join_group(
            MemberJoin(
                group_key=group_key,
                fields=canonical_json(fields),
                size=member.group_size,
                min_members=min_members,
                deadline_s=deadline_s,
                answer_id=member.answer.id,
                text=common.held(member.answer),
            )
        )
        common.check_member(json.loads(group.fields), group.members.get(member.answer.id), member)
        if group.closed_now:
            self._metrics.member_groups_closed.labels(reason="size").inc()
        pause = POLL_S
        while not group.closed:
            if group.seconds_left <= 0:
                closed = await self._store.close_group(group_key)
                if closed is None:
                    raise ConflictError(
                        f"group {member.group_key!r} is no longer open; send the member again"
                    )
                group = closed
                if group.closed_now:
                    self._metrics.member_groups_closed.labels(reason="deadline").inc()
                break
            await self._pause(min(pause, group.seconds_left))
            pause = min(pause * 2, POLL_MAX_S)
            found = await self._store.member_group(group_key)
            if found is None:  # pruned while waiting (only after a day): judged or answered long ago
                raise ConflictError(f"group {member.group_key!r} is no longer open; send the member again")
            group = found
        closed_by: ClosedBy = "size" if len(group.members) >= group.size else "deadline"
        self._metrics.member_wait_seconds.observe(time.monotonic() - joined_at)
        await self._prune_now_and_then()
        if member.answer.id not in group.members:
            how = "incomplete at its deadline" if len(group.members) < group.min_members else "without it"
            raise ConflictError(
                f"group {member.group_key!r} closed {how} ({len(group.members)} members), before answer "
                f"{member.answer.id!r} arrived; a late member is not judged alone",
                details={"group_key": member.group_key},
            )
        if len(group.members) < group.min_members:
            if group.closed_now:
                self._metrics.member_incomplete_groups.inc()
            return common.incomplete_reply(
                member.group_key,
                member.answer.id,
                present=len(group.members),
                size=group.size,
                min_members=group.min_members,
            )
        request = common.group_request(fields, group.members)
        judgement = await self._service.grade(request, idempotency_key=key, caller=caller)
        by_id = {a.id: a for a in judgement.answers}
        return common.member_reply(member.group_key, judgement, by_id[member.answer.id], closed_by)

    async def _pause(self, seconds: float) -> None:
        """Sleep, or stop waiting at shutdown (the member is answered 503 and sent again)."""
        try:
            await asyncio.wait_for(self._stopped.wait(), timeout=max(seconds, 0.001))
        except TimeoutError:
            return
        raise common.shutting_down()

    async def _prune_now_and_then(self) -> None:
        if time.monotonic() - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at = time.monotonic()
        try:
            pruned = await self._store.prune_groups(PRUNE_AFTER_S)
        except Exception as exc:  # pruning is housekeeping: never fail a member for it
            log.warning("could not prune closed member groups: %s", exc)
            return
        if pruned:
            log.info("forgot %d member groups closed over %.0f s ago", pruned, PRUNE_AFTER_S)

    async def shut_down(self) -> None:
        """Waiting members get 503 shutting_down and are sent again (their group lives in the store);
        members whose group is being judged here finish."""
        self._shutting_down = True
        self._stopped.set()
