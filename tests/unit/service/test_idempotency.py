"""The request hash an Idempotency-Key is bound to (service/idempotency.py request_hash), field by field:
any change to any one field of a judge request makes another request, and a field sent at its default is
the same request as one left out."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from pydantic import ValidationError

from judge_service.schemas import JudgeRequest
from judge_service.service.idempotency import request_hash
from tests.request_changes import JUDGE_FIELDS, change

BASE: dict[str, Any] = {
    "conversation": [{"role": "user", "content": "How do I share the report?"}],
    "reference": "Click Share.",
    "answers": [{"id": "a0", "text": "Click Share."}, {"id": "a1", "text": "Email it."}],
}


def test_the_changes_cover_every_field_of_a_judge_request() -> None:
    assert set(JUDGE_FIELDS) == set(JudgeRequest.model_fields)


@settings(max_examples=300, deadline=None)
@given(change(JUDGE_FIELDS))
def test_a_request_is_the_same_request_exactly_when_every_field_is_the_same(
    field_value: tuple[str, Any],
) -> None:
    field, value = field_value
    base = JudgeRequest.model_validate(BASE)
    try:
        changed = JudgeRequest.model_validate(BASE | {field: value})
    except ValidationError:
        assume(False)  # a value this field takes, refused next to the others (criteria and rubric)
        raise
    same = changed.model_dump(mode="json") == base.model_dump(mode="json")
    assert (request_hash(changed) == request_hash(base)) is same, field


@pytest.mark.parametrize("field", sorted(set(JudgeRequest.model_fields) - set(BASE)))
def test_a_field_sent_at_its_default_is_the_same_request(field: str) -> None:
    default = JudgeRequest.model_fields[field].get_default(call_default_factory=True)
    spelled = default.model_dump(mode="json") if hasattr(default, "model_dump") else default
    plain = JudgeRequest.model_validate(BASE)
    assert request_hash(JudgeRequest.model_validate(BASE | {field: spelled})) == request_hash(plain)


def test_attribution_makes_another_request() -> None:
    """Attribution takes answers given as trajectories (BASE's are text: the changes above are refused)."""
    steps = [{"role": "assistant", "content": "Click Share."}]
    trajectories = BASE | {"answers": [{"id": "t0", "messages": steps}, {"id": "t1", "text": "Email it."}]}
    plain = JudgeRequest.model_validate(trajectories)
    attributed = JudgeRequest.model_validate(trajectories | {"attribution": "steps"})
    assert request_hash(attributed) != request_hash(plain)
