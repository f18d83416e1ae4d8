"""NeMo Gym 0.7.0 (Python 3.13, its own environment built once by scripts/trainer_envs.sh): the
resources server's /verify through NeMo Gym's own webserver and judge failsafe, with real
BaseVerifyRequest bodies, against the service: four rollouts of one group judged in one judgement,
reward_components per criterion, and the judge-failed path (unscored, or the service down) masked, not 0."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.adapters.conftest import run_with_dead_judge
from tests.service_process import ServiceProcess

CRITERIA = {"correctness", "helpfulness", "tone", "format"}


def judgements(service: ServiceProcess) -> list[dict[str, Any]]:
    return list(httpx.get(f"{service.url}/v1/runs/nemo-run/judgements").json()["items"])


def test_verify_judges_rollouts_as_groups_and_masks_judge_failures(service: ServiceProcess) -> None:
    seen = run_with_dead_judge("nemo-gym", "nemo_gym_check.py", service.url)

    group = seen["group"]
    assert all(r["status"] == 200 and 0 <= r["reward"] <= 1 and not r.get("mask_sample") for r in group)
    assert all(set(r["reward_components"]) == CRITERIA for r in group)
    assert len({r["judgement_id"] for r in group}) == 1
    assert [
        (j["group_key"], len(j["answers"])) for j in judgements(service) if j["group_key"] == "ng-group-1"
    ] == [("ng-group-1", 4)]

    unscored = seen["unscored"]
    masked = [r for r in unscored if r.get("mask_sample")]
    assert len(masked) == 1 and masked[0]["reward"] == 0.0 and masked[0]["failure_kind"] == "judge_failed"
    assert "could not score" in masked[0]["failure_reason"]
    assert [r["status"] for r in unscored] == [200] * 4  # the failsafe answers, training goes on

    (options_group,) = {r["judgement_id"] for r in seen["options"]}  # request_options, one group
    whole = httpx.get(f"{service.url}/v1/judgements/{options_group}").json()
    assert whole["request"]["decoding"] == "per_answer" and len(whole["answers"]) == 4
    assert "seed cannot be sent with each member" in seen["bad_options"]

    # Rollouts that called functions are judged as turns with the request's tools, never as prose.
    agents = seen["agents"]
    assert [r["status"] for r in agents] == [200, 200] and agents[0]["judgement_id"] == agents[1][
        "judgement_id"
    ]
    request = httpx.get(f"{service.url}/v1/judgements/{agents[0]['judgement_id']}").json()["request"]
    assert request["tools"] == [
        {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}, "strict": True}}
    ]
    names = sorted(a["messages"][0]["tool_calls"][0]["function"]["name"] for a in request["answers"])
    assert names == ["mail", "search"]
    assert all(
        [t["role"] for t in a["messages"]] == ["assistant", "tool", "assistant"] for a in request["answers"]
    )
    assert "[tool result]" not in json.dumps(request)

    (single,) = seen["single"]
    assert single["status"] == 200 and 0 <= single["reward"] <= 1
    (down,) = seen["down"]
    assert down["mask_sample"] is True and down["failure_kind"] == "judge_failed"
    assert "unreachable" in down["failure_reason"]
