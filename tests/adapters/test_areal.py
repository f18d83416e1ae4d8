"""AReaL 1.0.4 (its own environment built once by scripts/trainer_envs.sh, without its GPU stack): AReaL's
RemoteInfEngine._resolve_workflow builds the workflow from its import path and wraps it in AReaL's
GroupedRolloutWorkflow, as its trainer does for `gconfig.n_samples`; a row's four episodes run concurrently
on a scripted engine and each asks for its own reward. One judgement per row, each reward its own answer's
score, the same row later a new group, and an unscored answer or a dead judge rejects the episode (None),
never a reward of 0."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.adapters.conftest import run_with_dead_judge
from tests.service_process import ServiceProcess

MARK = re.compile(r"\[fake judge: mark ([1-5])\]")


@pytest.fixture(scope="module")
def seen(service: ServiceProcess) -> dict[str, Any]:
    return run_with_dead_judge("areal", "areal_check.py", service.url)


def judgements(service: ServiceProcess, run_id: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{service.url}/v1/runs/{run_id}/judgements").json()["items"])


def test_the_trainer_resolves_the_workflow_and_groups_its_episodes(seen: dict[str, Any]) -> None:
    assert (seen["wrapper"], seen["inner"]) == ("GroupedRolloutWorkflow", "JudgeRLVRWorkflow")
    assert seen["example_run_id"] == "gsm8k-judged"  # examples/areal_judge.py's kwargs, as given


def test_a_rows_episodes_are_one_judgement_and_each_reward_is_its_own(
    seen: dict[str, Any], service: ServiceProcess
) -> None:
    stored = judgements(service, "areal-run")
    assert len(stored) == 3 and all(len(j["answers"]) == 4 for j in stored)
    assert len({j["group_key"] for j in stored}) == 3  # the same row at the next step is a new group
    for name in ("group", "again"):
        out = seen[name]
        assert len(out["rewards"]) == 4
        for text, reward in zip(out["texts"], out["rewards"], strict=True):
            mark = int(MARK.search(text).group(1))  # type: ignore[union-attr]
            assert reward == pytest.approx((mark - 1) / 4), text
        stats = out["stats"]
        assert stats["rollout/judge_correctness"] == pytest.approx(stats["rollout/reward"])
        assert stats["rollout/judge_unscored"] == 0.0


def test_an_unscored_answer_rejects_its_episode_and_the_group_trains_on_the_rest(
    seen: dict[str, Any], service: ServiceProcess
) -> None:
    out = seen["unscored"]
    (judged,) = [j for j in judgements(service, "areal-run") if any(a["score"] is None for a in j["answers"])]
    scored = [a["score"] for a in judged["answers"] if a["score"] is not None]
    assert len(scored) == 3 and Counter(out["rewards"]) == Counter(scored)  # the unscored one left out
    assert out["stats"]["rollout/judge_unscored"] == pytest.approx(1 / 4)
    assert out["stats"]["rollout/reward__count"] == 3  # AReaL's reward stat never saw a made-up value


def test_one_sample_per_row_is_judged_alone(seen: dict[str, Any], service: ServiceProcess) -> None:
    (alone,) = judgements(service, "areal-alone")
    assert alone["group_key"] is None and len(alone["answers"]) == 1
    assert seen["alone"]["rewards"] == [alone["answers"][0]["score"]]
    assert {"rollout/judge_correctness", "rollout/judge_tone"} <= set(seen["alone"]["stats"])


def test_a_dead_judge_rejects_the_episodes_within_the_timeout(seen: dict[str, Any]) -> None:
    dead = seen["dead"]
    assert dead["result"] is None  # every episode rejected: AReaL drops the row
    assert dead["stats"]["rollout/judge_unscored"] == 1.0
    assert "rollout/reward" not in dead["stats"]


def test_request_options_reach_each_member_and_a_wrong_one_stops_the_start(
    seen: dict[str, Any], service: ServiceProcess
) -> None:
    (item,) = httpx.get(f"{service.url}/v1/runs/areal-options/judgements").json()["items"]
    whole = httpx.get(f"{service.url}/v1/judgements/{item['judgement_id']}").json()
    assert whole["request"]["decoding"] == "per_answer" and len(whole["answers"]) == 4
    assert "request_options cannot set grader" in seen["bad_options"]  # grader= is the workflow's own
