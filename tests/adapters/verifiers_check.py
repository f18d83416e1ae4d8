"""Run in verifiers' own environment (scripts/trainer_envs.sh verifiers), by tests/adapters/test_verifiers.py:
a verifiers taskset whose task config plugs this service's judge, each rollout scored through
verifiers' own `Task.score` (what a rollout runs when its agent is done, and `vf-replay` runs offline), on
real `Trace` objects. Prints one JSON object: what each rollout got.

    python verifiers_check.py SERVICE_URL REFUSING_PORT
"""

from __future__ import annotations

import asyncio
import json
import sys
import tomllib
import uuid
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.graph import MessageNode
from verifiers.v1.types import AssistantMessage, Tool, ToolCall, ToolMessage, UserMessage

from judge_service.adapters import verifiers as adapter
from tests.adapters.vf_support_tasks import LEAVE_ONE_UNSCORED, SupportData, SupportTask

JUDGE_ID = "judge-service-verifiers"  # the plugin id a user writes
REPO = Path(__file__).resolve().parents[2]


def task(config: dict[str, Any], prompt: str, answer: str) -> SupportTask:
    task_config = vf.TaskConfig.model_validate({"judges": [{"id": JUDGE_ID, **config}]})
    return SupportTask(SupportData(prompt=prompt, answer=answer, system_prompt="Be brief."), task_config)


def rollout(of: SupportTask, reply: str) -> vf.Trace:
    """A finished single-turn rollout of the task, as a harness leaves it."""
    return vf.Trace(
        task=vf.TraceTask(type="SupportTask", data=of.data, key=of.key, hash=of.hash),
        agent={"config": vf.AgentConfig()},
        nodes=[
            MessageNode(message=UserMessage(content=str(of.data.prompt))),
            MessageNode(parent=0, message=AssistantMessage(content=reply), sampled=True),
        ],
    )


def agent_rollout(of: SupportTask, tool: str, found: str) -> vf.Trace:
    """A rollout that called a tool (verifiers' own flat ToolCall) and replied with what it found."""
    call = ToolCall(id="call_0", name=tool, arguments=json.dumps({"q": found}))
    messages = [
        UserMessage(content=str(of.data.prompt)),
        AssistantMessage(content=None, tool_calls=[call]),
        ToolMessage(tool_call_id="call_0", content=f"<page>{found}</page>"),
        AssistantMessage(content=f"Found: {found}."),
    ]
    nodes = [MessageNode(message=messages[0])]
    nodes += [
        MessageNode(parent=i, message=m, sampled=m.role == "assistant") for i, m in enumerate(messages[1:])
    ]
    trace = vf.Trace(
        task=vf.TraceTask(type="SupportTask", data=of.data, key=of.key, hash=of.hash),
        agent={"config": vf.AgentConfig()},
        nodes=nodes,
    )
    trace.tools = [Tool(name="search", description="Search the help pages.", parameters={"type": "object"})]
    return trace


async def scored(of: SupportTask, traces: list[vf.Trace]) -> list[dict[str, Any]]:
    """Each rollout scored concurrently, as verifiers scores rollouts when they finish."""

    async def one(trace: vf.Trace) -> dict[str, Any]:
        try:
            await of.score(trace)
        except Exception as exc:  # verifiers' TaskError: the rollout errors, it is not rewarded
            return {"error": f"{type(exc).__name__}: {exc}", "rewards": _rewards(trace)}
        return {
            "id": trace.id,
            "rewards": _rewards(trace),
            "reward": trace.reward,
            "metrics": trace.metrics,
            "info": trace.info.get("judge_service"),
        }

    return list(await asyncio.gather(*(one(t) for t in traces)))


def _rewards(trace: vf.Trace) -> dict[str, Any]:
    return {name: None if r is None else r.score for name, r in trace.rewards.items()}


async def main(url: str, refusing_port: str) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]  # the service may have judged these tasks before
    config = {"judge_service_url": url, "group_size": 4, "run_id": "vf-run", "group_scope": f"{run}-1"}
    first = task(config, "How do I share the report?", "Open the report and click Share.")
    group = await scored(first, [rollout(first, f"Click Share, then pick person {i}.") for i in range(4)])
    # The same task at the next step is a new group, not the stored one.
    again = await scored(
        task(
            {**config, "group_scope": f"{run}-2"},
            "How do I share the report?",
            "Open the report and click Share.",
        ),
        [rollout(first, f"Share it with person {i}.") for i in range(4)],
    )
    # A retried rollout (same trace) is answered from the stored judgement, not judged again.
    retried_trace = rollout(first, "Click Share, then pick person 0.")
    retried_trace.id = group[0]["id"]
    (retried,) = await scored(first, [retried_trace])
    # The fake judge leaves one answer of this group unscored: that rollout errors, the others score.
    second = task(config, f"How do I export a report? {LEAVE_ONE_UNSCORED}", "Use Export.")
    texts = ["Use Export.", "Export it.", "Export to PDF.", "Menu, Export."]
    unscored = await scored(second, [rollout(second, t) for t in texts])
    # Further request fields for every rollout, checked when the task config loads.
    chosen = {**config, "group_scope": f"{run}-3", "request_options": {"decoding": "per_answer"}}
    options_task = task(chosen, "How do I print a report?", "Use Print.")
    options = await scored(options_task, [rollout(options_task, f"Print it, way {i}.") for i in range(4)])
    try:
        task({**config, "request_options": {"seed": 1}}, "q", "a")
        bad_options = ""
    except ValueError as exc:  # pydantic's ValidationError
        bad_options = str(exc)
    single = await scored(task({"judge_service_url": url}, "Hi?", "Hello."), [rollout(first, "Hello!")])
    down_task = task(
        {"judge_service_url": f"http://127.0.0.1:{refusing_port}", "timeout_s": 3}, "Hi?", "Hello."
    )
    down = await scored(down_task, [rollout(down_task, "Hello!")])
    agents_task = task({**config, "group_size": 2, "group_scope": f"{run}-4"}, "Find the share page.", "")
    agents = await scored(
        agents_task,
        [agent_rollout(agents_task, "search", "share"), agent_rollout(agents_task, "mail", "pdf")],
    )
    example = tomllib.loads((REPO / "examples" / "verifiers_judge.toml").read_text())
    (plugged,) = task(example["env"]["taskset"]["task"]["judges"][0], "q", "a").plugged_judges()
    return {
        "example": {
            "class": type(plugged).__name__,
            "reward": plugged.reward_name,
            **plugged.config.model_dump(),
        },
        "group": group,
        "again": again,
        "retried": retried,
        "unscored": unscored,
        "single": single,
        "options": options,
        "agents": agents,
        "bad_options": bad_options,
        "down": down,
        "plugin": type(first.plugged_judges()[0]).__name__,
        "default_scope": adapter.PROCESS_SCOPE,
        "run": run,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2])), default=str))
