"""How a trainer's batch is cut into groups (adapters/groups.py): by the trainer's group ids, by
num_generations, or by runs of equal prompts."""

from __future__ import annotations

import pytest

from judge_service.adapters.groups import GroupOptions, SplitGroupError, group_spans, prepare


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
