"""OpenPipe ART (openpipe-art 0.5.23, Python 3.12): judge_score_group on real TrajectoryGroups against
the service, in the environment scripts/trainer_envs.sh builds (once; reused while its pins are
unchanged)."""

from __future__ import annotations

import json
import os
import subprocess

import httpx

from tests.adapters.conftest import run_with_dead_judge, trainer_python
from tests.service_process import REPO, ServiceProcess

SEARCH_FUNCTION = {
    "name": "search",
    "description": "Search the help pages.",
    "parameters": {"type": "object"},
}


def test_judge_score_group_on_real_trajectory_groups(service: ServiceProcess) -> None:
    seen = run_with_dead_judge("art", "art_check.py", service.url)

    rewards = seen["rewards"]
    assert len(rewards) == 4 and all(0 <= r <= 1 for r in rewards)
    for reward, metrics in zip(rewards, seen["metrics"], strict=True):
        assert metrics["independent_reward"] == 0.25 and metrics["judge_score"] == reward
        assert {"judge_correctness", "judge_helpfulness", "judge_tone", "judge_format"} <= set(metrics)
    assert all(any(line.startswith("judge (") for line in logs) for logs in seen["logs"])
    # The group passed in is untouched; what it carried comes along.
    assert seen["original_rewards"] == [0.25] * 4 and seen["original_metric_keys"] == [[]] * 4
    assert seen["metadata"] == {"reference": "Click Share and pick the client."}

    assert seen["kept_after_unscored"] == 3  # the unscored trajectory is dropped, not rewarded 0
    assert any("dropped unscored trajectory" in line for line in seen["group_logs"])
    assert seen["swallowed"] is None and seen["raised"] == "unreachable"
    assert seen["gathered"] == [4, 4]

    # A group without a reference in its metadata is sent without one, not with an empty one.
    assert seen["free_kept"] == 4
    (free,) = httpx.get(f"{service.url}/v1/runs/art-free/judgements").json()["items"]
    assert free["prompt_version"].startswith("judge_group/no_reference@")
    assert (
        httpx.get(f"{service.url}/v1/judgements/{free['judgement_id']}").json()["request"]["reference"]
        is None
    )

    # Tool-using trajectories go as turns and tools, never as prose.
    assert seen["agents_kept"] == 3
    (agents,) = httpx.get(f"{service.url}/v1/runs/art-tools/judgements").json()["items"]
    request = httpx.get(f"{service.url}/v1/judgements/{agents['judgement_id']}").json()["request"]
    assert request["tools"] == [{"type": "function", "function": SEARCH_FUNCTION}]
    assert request["conversation"][0]["content"] == "How do I share the report with a client?"
    assert len(request["conversation"]) == 1
    first, second, _ = request["answers"]
    assert [t["role"] for t in first["messages"]] == ["assistant", "tool", "assistant"]
    call = first["messages"][0]["tool_calls"][0]
    assert call["function"] == {"name": "search", "arguments": '{"q": "share report"}'}
    assert first["messages"][1]["tool_call_id"] == call["id"]
    assert second["messages"][0]["tool_calls"][0]["function"]["name"] == "email"  # as the policy wrote it
    assert first["text"] == "Found: share report."
    assert "[tool result]" not in json.dumps(request)

    stored = httpx.get(f"{service.url}/v1/runs/art-run/judgements").json()["items"]
    assert [(j["step"], len(j["answers"])) for j in stored] == [(3, 4)]

    assert seen["options_kept"] == 4  # request_options={"decoding": "per_answer"}
    (item,) = httpx.get(f"{service.url}/v1/runs/art-options/judgements").json()["items"]
    whole = httpx.get(f"{service.url}/v1/judgements/{item['judgement_id']}").json()
    assert whole["request"]["decoding"] == "per_answer"
    assert "request_options cannot set step" in seen["bad_options"]  # raised though swallow_exceptions


def test_the_art_example_runs(service: ServiceProcess) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [trainer_python("art"), str(REPO / "examples" / "art_judge.py"), "--judge", service.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("reward ")]
    assert len(lines) == 4 and all("judge (" in line for line in lines)
