"""The rules both assemblies share (local.py in one process, shared.py in the store): the group's
Idempotency-Key, the 409s for a member that does not fit its group, the 429s past the caps, a member's
deadline and minimum, the request judged for a closed group, and the replies a member gets."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from judge_service.config import MemberAssemblySettings
from judge_service.errors import ConflictError, OverloadedError, ShuttingDownError
from judge_service.schemas import (
    Answer,
    AnswerResult,
    JudgeRequest,
    JudgeResponse,
    MemberRequest,
    MemberResponse,
)
from judge_service.service.idempotency import request_hash
from judge_service.store.base import KeyedJudgement

ClosedBy = Literal["size", "deadline", "stored"]

# A member's answer is held as one text while its group fills (in memory, or in the store's text column):
# a text answer as its text, a trajectory as this mark and its turns as JSON. No answer text can begin
# with the mark (text refuses control characters), and what was held before trajectories reads the same.
TRAJECTORY_MARK = "\x01"


def held(answer: Answer) -> str:
    """An answer as the assembly holds it (TRAJECTORY_MARK)."""
    if answer.messages is None:
        return answer.text
    turns = [m.model_dump(mode="json") for m in answer.messages]
    return TRAJECTORY_MARK + json.dumps(turns, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _answer_body(answer_id: str, held_answer: str) -> dict[str, Any]:
    if held_answer.startswith(TRAJECTORY_MARK):
        return {"id": answer_id, "messages": json.loads(held_answer[len(TRAJECTORY_MARK) :])}
    return {"id": answer_id, "text": held_answer}


def shutting_down() -> ShuttingDownError:
    return ShuttingDownError("the service is shutting down; send the member again")


def group_idempotency_key(member: MemberRequest) -> str:
    """The Idempotency-Key an assembled group is judged and stored under: a hash of its run and key
    (visible ASCII without spaces, as a header key; the caller qualifies it as for any key)."""
    digest = hashlib.sha256(f"{member.run_id or ''}\n{member.group_key}".encode()).hexdigest()[:40]
    return f"member-{digest}"


def deadline_and_minimum(member: MemberRequest, settings: MemberAssemblySettings) -> tuple[float, int]:
    """Seconds from the group's first member to its deadline, and the members it needs to be judged then
    (never more than its size): the member's own values, else the settings'."""
    deadline_s = member.deadline_s if member.deadline_s is not None else settings.member_deadline_s
    min_members = member.min_members if member.min_members is not None else settings.member_min_members
    return deadline_s, min(min_members, member.group_size)


def admit_member(settings: MemberAssemblySettings, waiting: int) -> None:
    """429 when JUDGE_MEMBER_MAX_WAITING members already wait in this process."""
    if waiting >= settings.member_max_waiting:
        raise OverloadedError(
            f"{waiting} members wait for their groups (JUDGE_MEMBER_MAX_WAITING); retry later",
            retry_after_s=1,
        )


def admit_group(settings: MemberAssemblySettings, open_groups: int) -> None:
    """429 when a new group would pass JUDGE_MEMBER_MAX_OPEN_GROUPS in this process."""
    if open_groups >= settings.member_max_open_groups:
        raise OverloadedError(
            f"{open_groups} groups are open (JUDGE_MEMBER_MAX_OPEN_GROUPS); retry later", retry_after_s=1
        )


def check_member(fixed: Mapping[str, Any], known: str | None, member: MemberRequest) -> None:
    """409 for a member that differs from its group's first member, or whose answer id the group already
    holds (`known`, as held) with another answer."""
    sent = member.group_fields()
    differing = sorted(name for name, value in fixed.items() if sent.get(name) != value)
    if differing:
        raise ConflictError(
            f"this member of group {member.group_key!r} differs from the group's first member in: "
            f"{', '.join(differing)}; every member of a group sends the same group fields",
            details={"group_key": member.group_key, "differing": differing},
        )
    if known is not None and known != held(member.answer):
        raise ConflictError(
            f"answer id {member.answer.id!r} of group {member.group_key!r} was sent with another answer; an "
            "id names one answer",
            details={"group_key": member.group_key, "answer_id": member.answer.id},
        )


def group_request(fixed: Mapping[str, Any], answers: Mapping[str, str]) -> JudgeRequest:
    """The request a closed group is judged as: its first member's group fields and every member's answer
    (as held), in answer-id order (so every replica builds the same request)."""
    return JudgeRequest.model_validate(
        {
            **{name: value for name, value in fixed.items() if name != "group_size"},
            "answers": [_answer_body(answer_id, answers[answer_id]) for answer_id in sorted(answers)],
        }
    )


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


def from_stored(keyed: KeyedJudgement, member: MemberRequest) -> MemberResponse:
    """A member of a group already judged and stored: its result if it was judged as this member asks,
    else 409 (a member that differs from its group in a group field, as while the group was open; its
    group_size is not kept with the judgement, so it is not compared)."""
    stored = keyed.judgement
    texts = {a.id: held(a) for a in stored.request.answers}
    asked = request_hash(group_request(member.group_fields(), texts))
    if asked != keyed.request_hash and asked != request_hash(stored.request):
        judged = stored.request.model_dump()
        differing = sorted(
            name for name, value in member.group_fields().items() if judged.get(name, value) != value
        )
        raise ConflictError(
            f"group {member.group_key!r} was judged (judgement {stored.judgement_id}) with other group "
            f"fields than this member's{': ' + ', '.join(differing) if differing else ''}; every member of "
            "a group sends the same group fields",
            details={
                "judgement_id": stored.judgement_id,
                "group_key": member.group_key,
                "differing": differing,
            },
        )
    answer_id = member.answer.id
    if answer_id not in texts:
        raise ConflictError(
            f"group {member.group_key!r} was already judged without answer {answer_id!r} (judgement "
            f"{stored.judgement_id}, {len(texts)} members); a late member is not judged alone",
            details={"judgement_id": stored.judgement_id, "group_key": member.group_key},
        )
    if texts[answer_id] != held(member.answer):
        raise ConflictError(
            f"answer id {answer_id!r} of group {member.group_key!r} was judged with another answer",
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
