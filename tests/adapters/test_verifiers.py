"""verifiers 0.4.0 (its own environment built once by scripts/trainer_envs.sh): this service plugged as a
judge into a task config (`judges = [{id = "judge-service-verifiers", ...}]`), each rollout scored by
verifiers' own `Task.score` on real `Trace` objects: the four rollouts of one task judged in one
judgement, the same task at the next step a new group, a retried rollout answered from the stored
judgement, per-criterion metrics, and an unscored rollout or a failed call erroring the rollout (verifiers'
skip path), never rewarded 0."""

from __future__ import annotations

from typing import Any

import httpx

from tests.adapters.conftest import run_with_dead_judge
from tests.service_process import ServiceProcess

CRITERIA = {"correctness", "helpfulness", "tone", "format"}
REWARD = "judge-service-verifiers"  # the reward's name: the plugin id, unless the entry sets `name`


def judgements(service: ServiceProcess) -> list[dict[str, Any]]:
    return list(httpx.get(f"{service.url}/v1/runs/vf-run/judgements").json()["items"])


def test_rollouts_of_one_task_are_judged_as_one_group_and_failures_error_the_rollout(
    service: ServiceProcess,
) -> None:
    seen = run_with_dead_judge("verifiers", "verifiers_check.py", service.url)
    assert seen["plugin"] == "JudgeServiceJudge"
    example = seen["example"]  # examples/verifiers_judge.toml, as verifiers reads it
    assert example["class"] == "JudgeServiceJudge" and example["reward"] == "judge"
    assert example["group_size"] == 8 and example["judge_service_url"] == "http://127.0.0.1:8000"

    group = seen["group"]
    assert len({r["info"]["judgement_id"] for r in group}) == 1
    for rollout in group:
        assert 0 <= rollout["reward"] <= 1 and rollout["rewards"] == {REWARD: rollout["reward"]}
        assert {name.removeprefix(f"{REWARD}_") for name in rollout["metrics"]} == CRITERIA
        assert "correctness" in rollout["info"]["reason"]
    stored = {j["judgement_id"]: j for j in judgements(service)}
    judged = stored[group[0]["info"]["judgement_id"]]
    assert judged["group_key"].startswith("vf-") and judged["group_key"].endswith(f"{seen['run']}-1")
    # Scores map back to the rollouts: each rollout's answer id is its trace id.
    by_answer = {a["id"]: a["score"] for a in judged["answers"]}
    assert by_answer == {r["id"]: r["reward"] for r in group}

    again = seen["again"]
    assert len({r["info"]["judgement_id"] for r in again}) == 1
    assert again[0]["info"]["judgement_id"] != group[0]["info"]["judgement_id"]
    assert seen["retried"]["info"]["judgement_id"] == group[0]["info"]["judgement_id"]
    assert seen["retried"]["reward"] == group[0]["reward"]

    unscored = seen["unscored"]
    errored = [r for r in unscored if "error" in r]
    assert len(errored) == 1 and "could not score the rollout" in errored[0]["error"]
    assert errored[0]["error"].startswith("TaskError") and errored[0]["rewards"] == {REWARD: None}
    assert all(0 <= r["reward"] <= 1 for r in unscored if "error" not in r)

    (single,) = seen["single"]
    assert 0 <= single["reward"] <= 1
    (down,) = seen["down"]
    assert down["error"].startswith("TaskError") and "unreachable" in down["error"]
    assert down["rewards"] == {REWARD: None}  # never 0
