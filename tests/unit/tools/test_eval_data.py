"""The eval data formats: the labelled JSONL, and the GSM8K model-solutions converter on real lines of the
labelled public file (an excerpt in tests/data, with its source and licence)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge_service.schemas import JudgeRequest
from judge_service.tools.eval_data import read_groups

GSM8K = Path(__file__).resolve().parents[2] / "data" / "gsm8k-model-solutions" / "excerpt.jsonl"


def test_the_gsm8k_converter_reads_real_lines() -> None:
    groups = read_groups(GSM8K, "gsm8k-solutions", limit=3)
    assert [g.index for g in groups] == [0, 1, 2]
    first_line = json.loads(GSM8K.read_text().splitlines()[0])
    request = JudgeRequest.model_validate(groups[0].request)  # a valid judge request as it is
    assert request.conversation[0].content == first_line["question"]
    assert request.reference == first_line["ground_truth"]
    assert [a.id for a in request.answers] == [
        "6b_finetuning",
        "6b_verification",
        "175b_finetuning",
        "175b_verification",
    ]
    assert groups[0].labels == {k: v["is_correct"] for k, v in first_line.items() if isinstance(v, dict)}
    assert all(isinstance(label, bool) for g in groups for label in g.labels.values())


def test_the_labelled_format_keeps_other_fields_and_reads_numbers(tmp_path: Path) -> None:
    data = tmp_path / "labelled.jsonl"
    line = {
        "conversation": [{"role": "user", "content": "2+2?"}],
        "reference": "4",
        "answers": [{"id": "a", "text": "4", "label": True}, {"id": "b", "text": "5", "label": 2}],
        "grader": "numbers",
    }
    data.write_text(json.dumps(line) + "\n\n")
    (group,) = read_groups(data, "labelled")
    assert group.labels == {"a": True, "b": 2.0}
    assert group.request["grader"] == "numbers"
    assert all("label" not in answer for answer in group.request["answers"])


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"answers": [{"id": "a", "text": "x"}]}', "label"),
        ('{"answers": [{"id": "a", "text": "x", "label": "yes"}]}', "true, false or a number"),
        ("[1, 2]", "JSON object"),
        ("{not json", "not JSON"),
    ],
)
def test_a_line_that_cannot_be_read_is_named(tmp_path: Path, line: str, problem: str) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"answers": []}\n' + line + "\n")
    with pytest.raises(ValueError, match=problem) as caught:
        read_groups(data, "labelled")
    assert ":2:" in str(caught.value)


def test_only_mixed_groups_keep_their_index_in_the_file() -> None:
    mixed = read_groups(GSM8K, "gsm8k-solutions", limit=5, only_mixed=True)
    assert len(mixed) == 5
    assert all(len(set(g.labels.values())) == 2 for g in mixed)
    every = read_groups(GSM8K, "gsm8k-solutions", limit=mixed[-1].index + 1)
    assert [g.index for g in every if len(set(g.labels.values())) == 2] == [g.index for g in mixed]
