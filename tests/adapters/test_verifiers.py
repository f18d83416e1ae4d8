"""verifiers 0.4.0 (its own environment built once by scripts/trainer_envs.sh): this service plugged as a
judge into a task config (`judges = [{id = "judge-service-verifiers", ...}]`).

- End to end: `vf-eval` on a taskset (tests/adapters/vf_support_tasks), its agent a chat program that asks
  a policy served by the fake engine (OpenAI-compatible, streaming), each task's rollouts judged by the
  service: one judgement per task, each rollout's reward its answer's score, one unscored rollout errored.
- Through verifiers' own `Task.score` on real `Trace` objects: the same task at the next step a new group,
  a retried rollout answered from the stored judgement, a failed call erroring the rollout (verifiers'
  skip path), never rewarded 0."""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from tests.adapters.conftest import run_with_dead_judge, trainer_python
from tests.scaleout.processes import FakeEngine
from tests.service_process import REPO, ServiceProcess

CRITERIA = {"correctness", "helpfulness", "tone", "format"}
REWARD = "judge-service-verifiers"  # the reward's name: the plugin id, unless the entry sets `name`


def judgements(service: ServiceProcess, run_id: str = "vf-run") -> list[dict[str, Any]]:
    return list(httpx.get(f"{service.url}/v1/runs/{run_id}/judgements").json()["items"])


def test_vf_eval_judges_each_tasks_rollouts_as_one_group(service: ServiceProcess, tmp_path: Path) -> None:
    bin_dir = Path(trainer_python("verifiers")).parent
    policy = FakeEngine(tmp_path, "policy", latency_s=0.0, model="policy", policy=True)
    try:
        config = tmp_path / "judge.toml"
        config.write_text(
            "[[env.taskset.task.judges]]\n"
            'id = "judge-service-verifiers"\n'
            f'judge_service_url = "{service.url}"\ngroup_size = 4\nrun_id = "vf-eval"\n'
        )
        command = [
            str(bin_dir / "vf-eval"), "vf-support-tasks", "-r", "4", "-m", "policy",
            "--client.base-url", f"{policy.url}/v1",
            "--env.agent.runtime.type", "subprocess", "--env.agent.harness.id", "null",
            "--no-push", "--no-rich", "--output-dir", str(tmp_path / "runs"), "@", str(config),
        ]  # fmt: skip
        done = subprocess.run(
            command,
            cwd=tmp_path,
            env={
                **os.environ,
                "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",  # the uv the harness prepares with
                "PYTHONPATH": f"{REPO / 'tests' / 'adapters'}{os.pathsep}{REPO}",
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        served = policy.stats()["requests"]
    finally:
        policy.stop()
    (traces_file,) = (tmp_path / "runs").glob("*/traces.jsonl")
    rollouts = [json.loads(line)["traces"][0] for line in traces_file.read_text().splitlines()]
    assert len(rollouts) == 8 and served == 8  # 2 tasks x 4 rollouts, each one policy call
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rollout in rollouts:
        by_task[rollout["task"]["hash"]].append(rollout)
    stored = judgements(service, "vf-eval")
    assert len(stored) == 2  # one judgement per task
    for task_hash, group in by_task.items():
        (judged,) = [j for j in stored if j["group_key"].startswith(f"vf-{task_hash}-")]
        answers = {a["id"]: a for a in judged["answers"]}
        assert set(answers) == {r["id"] for r in group}  # each rollout an answer, by its trace id
        whole = httpx.get(f"{service.url}/v1/judgements/{judged['judgement_id']}").json()
        shown = {a["id"]: a["text"] for a in whole["request"]["answers"]}
        assert all(text.startswith("Answer ") for text in shown.values())  # the policy's replies were judged
        for rollout in group:
            answer, reward = answers[rollout["id"]], rollout["rewards"][REWARD]
            if answer["score"] is None:  # the judge left it unscored: the rollout errored, no reward
                assert reward is None and rollout["ok"] is False
                (error,) = rollout["errors"]
                assert error["type"] == "TaskError" and "could not score the rollout" in error["message"]
                continue
            assert reward["score"] == answer["score"] and rollout["ok"] is True
            assert {name.removeprefix(f"{REWARD}_") for name in rollout["metrics"]} == CRITERIA
            assert rollout["info"]["judge_service"]["judgement_id"] == judged["judgement_id"]
    unscored = [r for r in rollouts if r["rewards"][REWARD] is None]
    assert len(unscored) == 1 and "unscored" in unscored[0]["task"]["data"]["prompt"]


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

    (options_group,) = {r["info"]["judgement_id"] for r in seen["options"]}  # request_options: one group
    whole = httpx.get(f"{service.url}/v1/judgements/{options_group}").json()
    assert whole["request"]["decoding"] == "per_answer"
    assert "seed cannot be sent with each member" in seen["bad_options"]

    # Rollouts that called tools are judged as turns with the trace's tools, never as prose.
    (agents_group,) = {r["info"]["judgement_id"] for r in seen["agents"]}
    request = httpx.get(f"{service.url}/v1/judgements/{agents_group}").json()["request"]
    assert request["tools"][0]["function"]["name"] == "search" and request["reference"] is None
    calls = [a["messages"][0]["tool_calls"][0]["function"] for a in request["answers"]]
    assert sorted(c["name"] for c in calls) == ["mail", "search"]  # the name the policy wrote, kept
    assert all(a["messages"][1]["role"] == "tool" for a in request["answers"])
    assert sorted(a["text"] for a in request["answers"]) == ["Found: pdf.", "Found: share."]
    assert "[tool result]" not in json.dumps(request)

    (single,) = seen["single"]
    assert 0 <= single["reward"] <= 1
    (down,) = seen["down"]
    assert down["error"].startswith("TaskError") and "unreachable" in down["error"]
    assert down["rewards"] == {REWARD: None}  # never 0
