"""A member's group fields (assembly/common.py), field by field: a member that differs from its group in
any one group field is a 409, while the group is open (check_member) and after it was judged
(from_stored), and a member that sends the same fields gets its answer's result."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import assume, given, settings
from pydantic import ValidationError

from judge_service.assembly.common import check_member, from_stored, group_request
from judge_service.errors import ConflictError
from judge_service.schemas import AnswerResult, MemberRequest, StoredJudgement, Timings, Usage
from judge_service.service.idempotency import request_hash
from judge_service.store.base import KeyedJudgement
from tests.request_changes import MEMBER_FIELDS, change

BASE: dict[str, Any] = {
    "group_key": "prompt-1",
    "group_size": 2,
    "answer": {"id": "a0", "text": "Click Share."},
    "conversation": [{"role": "user", "content": "How do I share the report?"}],
    "reference": "Click Share.",
    "run_id": "members",
}
# Fields a member sends that are not its group's: its own answer, and what only the first member sets.
NOT_GROUP_FIELDS = {"answer", "deadline_s", "min_members"}


def member(**changes: Any) -> MemberRequest:
    try:
        return MemberRequest.model_validate(BASE | changes)
    except ValidationError:
        assume(False)  # a value the field takes, refused beside the others (criteria and rubric)
        raise


def judged(first: MemberRequest) -> KeyedJudgement:
    """The group of `first` and a second member, judged and stored under its key."""
    request = group_request(first.group_fields(), {"a0": "Click Share.", "a1": "Email it."})
    answers = [AnswerResult(id=a.id, status="scored", score=0.5) for a in request.answers]
    stored = StoredJudgement(
        judgement_id="c" * 32,
        created_at=datetime.now(UTC),
        status="ok",
        grader="judge",
        judge_model="fake-judge",
        prompt_version="p",
        run_id=request.run_id,
        step=None,
        group_key=request.group_key,
        answers=answers,
        usage=Usage(),
        timings=Timings(),
        attempts=1,
        request=request,
        raw_outputs=[],
    )
    return KeyedJudgement(stored, request_hash(request))


def test_the_changes_cover_every_field_of_a_member_request() -> None:
    assert set(MEMBER_FIELDS) == set(MemberRequest.model_fields)
    assert set(member().group_fields()) == set(MemberRequest.model_fields) - NOT_GROUP_FIELDS


@settings(max_examples=200, deadline=None)
@given(change(MEMBER_FIELDS))
def test_a_member_differing_in_any_group_field_is_409_while_the_group_is_open(
    field_value: tuple[str, Any],
) -> None:
    field, value = field_value
    first, other = member(), member(**{field: value})
    differs = field not in NOT_GROUP_FIELDS and other.group_fields() != first.group_fields()
    if differs:
        with pytest.raises(ConflictError) as refused:
            check_member(first.group_fields(), None, other)
        assert refused.value.details is not None and field in refused.value.details["differing"]
    else:
        check_member(first.group_fields(), None, other)


@settings(max_examples=200, deadline=None)
@given(change(MEMBER_FIELDS))
def test_a_member_differing_in_any_group_field_is_409_after_its_group_was_judged(
    field_value: tuple[str, Any],
) -> None:
    field, value = field_value
    assume(field not in {"answer", "group_size"})  # its own answer: below; the size is not stored
    stored = judged(member())
    retried = member(**{field: value})
    first_request = group_request(member().group_fields(), {"a0": "", "a1": ""}).model_dump(mode="json")
    same = (
        group_request(retried.group_fields(), {"a0": "", "a1": ""}).model_dump(mode="json") == first_request
    )
    if same:
        assert from_stored(stored, retried).answer.id == "a0"
    else:
        with pytest.raises(ConflictError):
            from_stored(stored, retried)


def test_a_retried_member_gets_its_result_and_another_answer_text_is_409() -> None:
    stored = judged(member())
    assert from_stored(stored, member()).closed_by == "stored"
    with pytest.raises(ConflictError):
        from_stored(stored, member(answer={"id": "a0", "text": "another text"}))
