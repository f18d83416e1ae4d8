"""OpenRLHF 0.11.2's own remote-reward client (SingleTurnAgentExecutor._fetch_rewards_via_http) against
POST /v1/compat/openrlhf: four samples of one prompt, sent at once, are judged as one group and each gets
a number; an unscored one gets the fallback with judge_ok 0."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from openrlhf.utils.agent import SingleTurnAgentExecutor

from judge_service.backends.fake import LEAVE_ONE_UNSCORED
from tests.service_process import ServiceProcess

PROMPT = "<|im_start|>user\nHow do I share the report?<|im_end|>\n<|im_start|>assistant\n"
RESPONSES = ["Click Share.", "Use the Share button.", "Email it.", "You cannot."]


async def fetch_all(url: str, prompt: str, label: str) -> list[dict[str, Any]]:
    executor = SingleTurnAgentExecutor(remote_rm_url=url)
    queries = [prompt + response + "<|im_end|>" for response in RESPONSES]
    replies = await asyncio.gather(
        *(executor._fetch_rewards_via_http([q], [prompt], [label]) for q in queries)
    )
    return [reply[0] for reply in replies]


def stored(service: ServiceProcess, run_id: str) -> list[dict[str, Any]]:
    items = httpx.get(f"{service.url}/v1/runs/{run_id}/judgements").json()["items"]
    return [httpx.get(f"{service.url}/v1/judgements/{i['judgement_id']}").json() for i in items]


def test_openrlhf_samples_are_judged_as_one_group(service: ServiceProcess) -> None:
    url = f"{service.url}/v1/compat/openrlhf?group_size=4&run_id=orlhf"
    infos = asyncio.run(fetch_all(url, PROMPT, "Click Share and pick the client."))
    assert all(len(i["rewards"]) == len(i["scores"]) == 1 for i in infos)
    assert all(isinstance(i["rewards"][0], float) and 0 <= i["rewards"][0] <= 1 for i in infos)
    assert all(i["extra_logs"] == {"judge_ok": 1.0, "judge_members": 4.0} for i in infos)
    (judgement,) = stored(service, "orlhf")
    assert sorted(a["text"] for a in judgement["request"]["answers"]) == sorted(RESPONSES)  # tokens stripped
    assert judgement["request"]["conversation"] == [{"role": "user", "content": "How do I share the report?"}]


def test_a_json_label_names_the_group_and_unscored_gets_the_fallback(service: ServiceProcess) -> None:
    url = f"{service.url}/v1/compat/openrlhf?group_size=4&run_id=orlhf-json&fallback=-1"
    label = json.dumps({"group_id": "task-17", "reference": "Click Share."})
    prompt = PROMPT.replace("report?", f"report? {LEAVE_ONE_UNSCORED}")
    infos = asyncio.run(fetch_all(url, prompt, label))
    rewards = [i["rewards"][0] for i in infos]
    assert sorted(i["extra_logs"]["judge_ok"] for i in infos) == [0.0, 1.0, 1.0, 1.0]
    assert rewards.count(-1.0) == 1 and all(r == -1.0 or 0 <= r <= 1 for r in rewards)
    (judgement,) = stored(service, "orlhf-json")
    assert (judgement["group_key"], judgement["request"]["reference"]) == ("task-17", "Click Share.")


def test_chat_templates_are_read_back_into_turns() -> None:
    from judge_service.api.compat.openrlhf import conversation

    llama = (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert conversation(llama) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
    ]
    assert conversation("Question: 2+2?\nAnswer:") == [{"role": "user", "content": "Question: 2+2?\nAnswer:"}]


def test_lists_that_do_not_line_up_are_a_422(service: ServiceProcess) -> None:
    reply = httpx.post(
        f"{service.url}/v1/compat/openrlhf?group_size=2",
        json={"query": ["a", "b"], "prompts": ["a"], "labels": []},
    )
    assert reply.status_code == 422 and "as long as each other" in reply.json()["error"]["message"]
