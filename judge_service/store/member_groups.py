"""Member groups in the store (the shared assembly, assembly/shared.py), written once for both stores: the
SQL with `{p}` for the placeholder and `{now}` for the database's clock in seconds, and the join's decision
as a pure function. Each store runs them in its own transaction, locking its own way (SQLite's write lock,
PostgreSQL's FOR UPDATE), which is why the transaction itself is not shared."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from judge_service.store.base import MemberGroup, MemberJoin


@dataclass(frozen=True)
class MemberGroupSql:
    """The statements for one dialect."""

    open_group: str  # params: group_key, fields, size, min_members, deadline_s
    select_group: str  # params: group_key; FOR UPDATE appended by a store that locks rows
    select_members: str  # params: group_key
    add_member: str  # params: group_key, answer_id, text
    close_group: str  # params: group_key; one row changed when this call closed it
    prune_members: str  # params: closed_for_s
    prune_groups: str  # params: closed_for_s; its row count is the number pruned

    @classmethod
    def for_dialect(cls, p: str, now: str) -> MemberGroupSql:
        closed_long_ago = f"closed_at < {now} - {p}"
        return cls(
            open_group="INSERT INTO member_groups (group_key, fields, size, min_members, deadline_at)"
            f" VALUES ({p}, {p}, {p}, {p}, {now} + {p}) ON CONFLICT (group_key) DO NOTHING",
            select_group=f"SELECT fields, size, min_members, deadline_at - {now}, closed_at IS NOT NULL"
            f" FROM member_groups WHERE group_key = {p}",
            select_members=f"SELECT answer_id, text FROM group_members WHERE group_key = {p}",
            add_member=f"INSERT INTO group_members (group_key, answer_id, text) VALUES ({p}, {p}, {p})",
            close_group=f"UPDATE member_groups SET closed_at = {now}"
            f" WHERE group_key = {p} AND closed_at IS NULL",
            prune_members="DELETE FROM group_members WHERE group_key IN"
            f" (SELECT group_key FROM member_groups WHERE {closed_long_ago})",
            prune_groups=f"DELETE FROM member_groups WHERE {closed_long_ago}",
        )


def open_params(join: MemberJoin) -> tuple[object, ...]:
    return (join.group_key, join.fields, join.size, join.min_members, join.deadline_s)


def member_group(row: Sequence[Any], members: Sequence[Sequence[Any]]) -> MemberGroup:
    """A group from its select_group row and select_members rows."""
    return MemberGroup(
        fields=str(row[0]),
        size=int(row[1]),
        min_members=int(row[2]),
        seconds_left=float(row[3]),
        closed=bool(row[4]),
        members={str(answer_id): str(text) for answer_id, text in members},
    )


def join(group: MemberGroup, member: MemberJoin) -> tuple[MemberGroup, bool]:
    """The group after `member` asks to join it, read under the store's lock, and whether the member is
    added (then the store inserts it, and closes the group when `closed_now`). Not added: the group is
    closed, the member's fields differ from the group's (the caller answers 409), or its answer id is
    there already (a retry; the caller compares texts)."""
    if group.closed or group.fields != member.fields or member.answer_id in group.members:
        return group, False
    members = {**group.members, member.answer_id: member.text}
    full = len(members) >= group.size
    return replace(group, members=members, closed=full, closed_now=full), True
