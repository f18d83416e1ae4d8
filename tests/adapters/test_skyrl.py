"""SkyRL (skyrl 0.3.0 and skyrl-gym 0.4.0, in their own environment built once by scripts/trainer_envs.sh):
SkyRL's command line with `trainer.override_entrypoint=judge_service.adapters.skyrl` builds the judged
generator, which runs SkyRL's agent loop and batched path on its gsm8k environment with a scripted policy:
each prompt's four trajectories are one judgement, each reward is its own answer's score (in the form
SkyRL gave it), a retried step replays, and an unscored answer, or a dead judge, masks the trajectory
instead of rewarding 0."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.adapters.conftest import run_with_dead_judge
from tests.service_process import ServiceProcess

MARK = re.compile(r"\[fake judge: mark ([1-5])\]")


@pytest.fixture(scope="module")
def seen(service: ServiceProcess) -> dict[str, Any]:
    return run_with_dead_judge("skyrl", "skyrl_check.py", service.url)


def judgements(service: ServiceProcess) -> list[dict[str, Any]]:
    return list(httpx.get(f"{service.url}/v1/runs/skyrl-run/judgements").json()["items"])


def final_reward(reward: float | list[float]) -> float:
    return sum(reward) if isinstance(reward, list) else reward


def test_the_command_line_override_builds_the_judged_generator(seen: dict[str, Any]) -> None:
    assert seen["config"] == "JudgedTrainConfig" and seen["criteria"] == ["correctness", "tone"]
    assert seen["agent_loop"]["class"] == "JudgeServiceGenerator"
    assert seen["agent_loop"]["run_id"] == "skyrl-run"  # the run name, when no run id is given
    assert "step_wise_trajectories" in seen["step_wise"]
    # examples/skyrl_judge.sh's command line passes SkyRL's own parse and validation
    assert seen["example"] == {"judge_url": "http://127.0.0.1:8000"}


@pytest.mark.parametrize("path", ["agent_loop", "batched"])
def test_each_prompt_is_one_judgement_and_scores_map_back(
    seen: dict[str, Any], service: ServiceProcess, path: str
) -> None:
    out = seen[path]
    step = 1 if path == "agent_loop" else 2
    stored = [j for j in judgements(service) if j["step"] == step]
    assert sorted(j["group_key"] for j in stored) == ["skyrl-train/q1", "skyrl-train/q2"]
    assert all(len(j["answers"]) == 4 for j in stored)
    # The agent loop gives token-level rewards, the batched path one float; the form is kept.
    assert all(isinstance(r, list if path == "agent_loop" else float) for r in out["rewards"])
    marked = [i for i, uid in enumerate(out["uids"]) if uid == "q1"]  # q1's answers carry their marks
    assert len(marked) == 4
    for i in marked:
        text, reward, mask = out["texts"][i], out["rewards"][i], out["loss_masks"][i]
        mark = int(MARK.search(text).group(1))  # type: ignore[union-attr]
        assert final_reward(reward) == pytest.approx((mark - 1) / 4), (i, text)
        assert any(mask) and out["env_metrics"][i]["judge_correctness"] == pytest.approx((mark - 1) / 4)
        if isinstance(reward, list):  # on the last token the policy wrote
            assert reward[max(k for k, m in enumerate(mask) if m)] == final_reward(reward)


@pytest.mark.parametrize("path", ["agent_loop", "batched"])
def test_an_unscored_answer_is_masked_not_rewarded_zero(seen: dict[str, Any], path: str) -> None:
    out = seen[path]
    masked = [i for i, m in enumerate(out["env_metrics"]) if m["judge_ok"] == 0.0]
    assert len(masked) == 1 and out["uids"][masked[0]] == "q2"
    (i,) = masked
    assert not any(out["loss_masks"][i])
    siblings = [final_reward(out["rewards"][k]) for k, u in enumerate(out["uids"]) if u == "q2" and k != i]
    assert final_reward(out["rewards"][i]) == pytest.approx(sum(siblings) / 3)  # moves no advantage
    assert out["rollout_metrics"]["judge/unscored_share"] == pytest.approx(1 / 8)
    assert {"judge/correctness", "judge/tone"} <= set(out["rollout_metrics"])


def test_a_retried_step_replays_its_judgements(seen: dict[str, Any], service: ServiceProcess) -> None:
    assert seen["retried"]["rewards"] == seen["first_try"]["rewards"]
    assert len([j for j in judgements(service) if j["step"] == 5]) == 2  # not judged again


def test_a_dead_judge_masks_the_batch_within_its_timeout(seen: dict[str, Any]) -> None:
    out = seen["dead"]
    assert out["rollout_metrics"]["judge/unscored_share"] == 1.0
    assert all(not any(mask) for mask in out["loss_masks"])
    assert all(final_reward(r) == 0.0 for r in out["rewards"])  # equal within each group: no advantage


def test_request_options_reach_every_group_and_a_typo_stops_the_start(
    seen: dict[str, Any], service: ServiceProcess
) -> None:
    decodings = {}
    for step in (1, 6):
        for item in [j for j in judgements(service) if j["step"] == step]:
            whole = httpx.get(f"{service.url}/v1/judgements/{item['judgement_id']}").json()
            decodings.setdefault(step, set()).add(whole["request"]["decoding"])
    assert decodings == {1: {None}, 6: {"per_answer"}}  # generator.judge.request_options={decoding: ...}
    assert "unknown request field(s) decodng" in seen["bad_options"]
