"""How a trainer's batch is cut into groups (adapters/groups.py): by the trainer's group ids, by
num_generations, or by runs of equal prompts."""

from __future__ import annotations

import pytest

from judge_service.adapters.groups import (
    GroupOptions,
    SplitGroupError,
    group_spans,
    prepare,
    reference_of,
    request_options,
)


def test_group_ids_cut_the_batch_where_the_id_changes_even_if_prompts_repeat() -> None:
    prompts = ["p", "p", "p", "p", "q"]
    assert group_spans(prompts, None, ["u1", "u1", "u2", "u2", "u3"]) == [
        range(0, 2),
        range(2, 4),
        range(4, 5),
    ]
    assert group_spans(prompts, None) == [range(0, 4), range(4, 5)]  # without ids: runs of equal prompts
    with pytest.raises(ValueError, match="2 group ids for 5 completions"):
        group_spans(prompts, None, ["u1", "u2"])


def test_num_generations_refuses_a_split_group() -> None:
    assert group_spans(["p", "p", "q", "q"], 2) == [range(0, 2), range(2, 4)]
    with pytest.raises(SplitGroupError):
        group_spans(["p", "p", "q"], 2)


def test_a_group_is_keyed_by_its_id_after_the_scope() -> None:
    batch = prepare(
        ["p", "p", "p", "p"],
        ["a", "b", "c", "d"],
        ["ref"] * 4,
        num_generations=None,
        options=GroupOptions(run_id="run"),
        step=3,
        scope="train/",
        group_ids=["u1", "u1", "u2", "u2"],
    )
    assert [r.group_key for r in batch.requests.values()] == ["train/u1", "train/u2"]
    assert [[a.text for a in r.answers] for r in batch.requests.values()] == [["a", "b"], ["c", "d"]]
    assert batch.key_prefix is not None and batch.key_prefix.startswith("run:3:train/:")


def test_request_options_are_checked_before_any_batch() -> None:
    assert request_options(None) == {}
    chosen = {"jury": {"escalate": 1}, "decoding": "per_answer"}
    assert request_options(chosen) == chosen
    with pytest.raises(ValueError, match="unknown request field"):
        request_options({"jurry": {}})
    with pytest.raises(ValueError, match="cannot set criteria, run_id"):
        request_options({"run_id": "x", "criteria": []})
    with pytest.raises(ValueError, match="decoding"):
        request_options({"decoding": "sideways"})


def test_request_options_sent_with_members_must_be_member_fields() -> None:
    chosen = {"cascade": {"rule": "numbers", "judge": "ties"}, "min_members": 2}
    with pytest.raises(ValueError, match="unknown request field"):  # min_members: a member field only
        request_options(chosen, members=True)
    assert request_options({"decoding": "per_answer"}, members=True) == {"decoding": "per_answer"}
    with pytest.raises(ValueError, match="seed cannot be sent with each member"):
        request_options({"seed": 3}, members=True)
    assert request_options({"seed": 3}) == {"seed": 3}  # fine on whole groups
    with pytest.raises(ValueError, match="cannot set deadline_s, group_size"):
        request_options({"group_size": 4, "deadline_s": 1.0}, members=True)


def test_request_options_go_into_every_group() -> None:
    options = GroupOptions(grader="jury", request={"jury": {"aggregate": "min"}})
    batch = prepare(["p", "p"], ["a", "b"], ["r", "r"], num_generations=2, options=options, step=0)
    (request,) = batch.requests.values()
    assert request.grader == "jury" and request.jury is not None and request.jury.aggregate == "min"


def test_a_missing_or_empty_gold_answer_is_sent_as_no_reference() -> None:
    assert reference_of(None) is None and reference_of("") is None and reference_of("  \n") is None
    assert reference_of(42) == "42" and reference_of("a\x07b") == "ab"  # text, control characters dropped
    batch = prepare(
        ["p", "p", "q", "q", "r", "r"],
        ["a", "b", "c", "d", "e", "f"],
        ["ref", "ref", None, None, "", ""],
        num_generations=2,
        options=GroupOptions(),
        step=None,
    )
    assert [r.reference for r in batch.requests.values()] == ["ref", None, None]
    without = prepare(["p", "p"], ["a", "b"], None, num_generations=2, options=GroupOptions(), step=None)
    assert [r.reference for r in without.requests.values()] == [None]
