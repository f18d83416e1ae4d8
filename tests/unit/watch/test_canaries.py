"""Which groups get a canary and of which kind, the canary's id, and whether it outranks its group."""

from __future__ import annotations

import random

import pytest

from judge_service.schemas import CANARY_KINDS, Answer, AnswerResult, JudgeRequest
from judge_service.watch.canaries import Canary, CanaryPolicy, canary_id, result


def request(reference: str = "A: 18", **extra: object) -> JudgeRequest:
    return JudgeRequest.model_validate(
        {
            "conversation": [{"role": "user", "content": "How many eggs are sold?"}],
            "reference": reference,
            "answers": [{"id": f"a{i}", "text": f"answer {i}"} for i in range(1, 5)],
            **extra,
        }
    )


def test_rate_zero_gives_none_and_rate_one_gives_one_to_every_group() -> None:
    assert all(CanaryPolicy(0.0).choose(request(), f"id{i}") is None for i in range(200))
    chosen = [CanaryPolicy(1.0).choose(request(), f"id{i}") for i in range(200)]
    assert all(c is not None for c in chosen)
    assert {c.kind for c in chosen if c is not None} == set(CANARY_KINDS)


def test_the_rate_is_the_share_of_groups() -> None:
    chosen = sum(CanaryPolicy(0.1).choose(request(), f"judgement-{i}") is not None for i in range(4000))
    assert 320 <= chosen <= 480  # 10% of 4000, within 5 standard deviations


def test_the_request_overrides_the_rate() -> None:
    assert CanaryPolicy(1.0).choose(request(canaries="off"), "x") is None
    assert CanaryPolicy(0.0).choose(request(canaries="on"), "x") is not None
    kinds = {CanaryPolicy(0.0).choose(request(canaries=["empty", "refusal"]), f"{i}").kind for i in range(50)}  # type: ignore[union-attr]
    assert kinds == {"empty", "refusal"}
    only = CanaryPolicy(0.0, kinds=("opener",)).choose(request(canaries="on"), "x")
    assert only is not None and only.kind == "opener"


def test_a_group_without_a_figure_draws_another_kind_or_none_if_only_the_twist_was_allowed() -> None:
    plain = "Open the report and click Share."
    kinds = {CanaryPolicy(1.0).choose(request(plain), f"{i}").kind for i in range(300)}  # type: ignore[union-attr]
    assert kinds == set(CANARY_KINDS) - {"reference_twist", "verbose_wrong"}
    assert CanaryPolicy(0.0).choose(request(plain, canaries=["reference_twist"]), "x") is None
    fallback = CanaryPolicy(0.0).choose(request(plain, canaries=["reference_twist", "refusal"]), "x")
    assert fallback is not None and fallback.kind == "refusal"


def test_the_choice_is_fixed_by_the_judgement_id() -> None:
    policy = CanaryPolicy(0.5)
    for i in range(50):
        assert policy.choose(request(), f"j{i}") == policy.choose(request(), f"j{i}")


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["a1", "a2", "a3", "a4"], "a5"),
        (["0", "1", "2"], "3"),
        (["07", "08", "09"], "10"),
        (["answer-01", "answer-02"], "answer-03"),
        (["6b_finetuning", "6b_verification"], None),  # not one prefix: a redrawn id of the same shape
        (["3f9c2a", "b71e04"], None),
    ],
)
def test_a_canary_id_has_the_form_of_the_callers_ids(ids: list[str], expected: str | None) -> None:
    made = canary_id(ids, random.Random(1))
    assert made not in ids
    if expected is not None:
        assert made == expected
    else:
        assert any(
            len(made) == len(i)
            and all(
                a.isdigit() == b.isdigit() and a.isalpha() == b.isalpha()
                for a, b in zip(made, i, strict=True)
            )
            for i in ids
        )


def test_a_canary_id_is_free_even_where_the_ids_leave_little_room() -> None:
    every_digit = [str(d) for d in range(10)] + ["x"]
    assert canary_id(every_digit, random.Random(0)) not in every_digit
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    assert canary_id(letters, random.Random(0)) not in letters


def scored(score: float | None) -> AnswerResult:
    if score is None:
        return AnswerResult(id="x", status="unscored", score=None, error="no marks")
    return AnswerResult(id="x", status="scored", score=score)


@pytest.mark.parametrize(
    ("canary", "answers", "outranked"),
    [
        (0.6, [0.2, 0.5, 0.9], True),  # above the median 0.5
        (0.5, [0.2, 0.5, 0.9], False),  # a tie is not outranking
        (0.4, [0.2, 0.3, 0.5, 0.9], False),  # even count: the median is 0.4
        (0.45, [0.2, 0.3, 0.5, 0.9, None], True),  # unscored answers are left out
        (None, [0.2, 0.3], None),  # the canary unscored: no outcome
        (0.9, [None, None], None),  # no scored answer: no outcome
    ],
)
def test_a_canary_outranks_its_group_above_the_median(
    canary: float | None, answers: list[float | None], outranked: bool | None
) -> None:
    planted = Canary("empty", Answer.model_construct(id="c1", text=""))
    stored = result(planted, scored(canary), [scored(a) for a in answers])
    assert stored.outranked is outranked and stored.kind == "empty" and stored.text == ""
    assert stored.score == canary
