"""The labelled trajectory set built from BFCL (benchmarks/build_eval_bfcl.py): every group reads as the eval
tool reads it and is a valid judge request with and without its reference under each configuration; one
answer in each is right, its call the reference's, and the ids give nothing away."""

from __future__ import annotations

import json
from pathlib import Path

from judge_service.schemas import JudgeRequest
from judge_service.tools.eval import read_configurations
from judge_service.tools.eval_data import read_groups

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_every_group_is_a_labelled_request_with_one_right_call() -> None:
    groups = read_groups(BENCHMARKS / "eval_bfcl.jsonl", "labelled")
    configurations = read_configurations(BENCHMARKS / "eval_bfcl.json")
    assert len(groups) == 40 and len(configurations) == 2
    for group in groups:
        assert sorted(group.labels.values()) == [False] * (len(group.labels) - 1) + [True]
        assert set(group.labels) == {f"a{i}" for i in range(1, len(group.labels) + 1)}
        kinds = group.request["item"]["kinds"]
        (right,) = [a for a in group.request["answers"] if group.labels[a["id"]]]
        assert kinds[right["id"]] == "right"
        (call,) = right["messages"][0]["tool_calls"]
        arguments = json.loads(call["function"]["arguments"])
        expected = (
            f"{call['function']['name']}({', '.join(f'{k}={json.dumps(v)}' for k, v in arguments.items())})"
        )
        assert group.request["reference"] == expected
        for configuration in configurations:
            request = JudgeRequest.model_validate({**group.request, **configuration.request})
            assert request.structured and (request.reference is None) == (
                "reference" in configuration.request
            )
