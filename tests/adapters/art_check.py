"""Run by tests/adapters/test_art.py inside the ART environment (.venv-art, Python 3.12, openpipe-art),
with this repository on PYTHONPATH: judge_score_group on real art.TrajectoryGroup objects against the
service at argv[1] (argv[2]: a port that refuses connections). Prints one JSON object of what it saw."""

from __future__ import annotations

import asyncio
import json
import sys

import art

from judge_service.adapters.art import judge_score_group
from judge_service.client import JudgeClientError

MARKER = "[fake judge: leave one answer unscored]"  # judge_service.backends.fake.LEAVE_ONE_UNSCORED


def group(system: str, reward: float = 0.25, *, reference: bool = True) -> art.TrajectoryGroup:
    answers = ["Click Share, then pick the client.", "Use Share.", "You cannot.", "Email it as a PDF."]
    trajectories = [
        art.Trajectory(
            messages_and_choices=[
                {"role": "system", "content": system},
                {"role": "user", "content": "How do I share the report with a client?"},
                {"role": "assistant", "content": answer},
            ],
            reward=reward,
        )
        for answer in answers
    ]
    metadata = {"reference": "Click Share and pick the client."} if reference else {}
    return art.TrajectoryGroup(trajectories, metadata=metadata)


SEARCH = {
    "type": "function",
    "function": {"name": "search", "description": "Search the help pages.", "parameters": {"type": "object"}},
}


def tool_group() -> art.TrajectoryGroup:
    """Agents that searched (one called a tool it was not given), with tool results, no gold answer."""
    trajectories = []
    for i, (tool, query) in enumerate([("search", "share report"), ("email", "client"), ("search", "pdf")]):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": tool, "arguments": {"q": query}}}
        trajectories.append(
            art.Trajectory(
                messages_and_choices=[
                    {"role": "user", "content": "How do I share the report with a client?"},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"call_{i}", "content": f"<page>{query}</page>"},
                    {"role": "assistant", "content": f"Found: {query}."},
                ],
                tools=[SEARCH],
                reward=0.0,
            )
        )
    return art.TrajectoryGroup(trajectories)


async def main(url: str, refusing_port: int) -> dict[str, object]:
    seen: dict[str, object] = {}
    original = group("You are a helpful assistant.")
    scored = await judge_score_group(original, url, run_id="art-run", step=3)
    assert scored is not None
    seen["rewards"] = [t.reward for t in scored.trajectories]
    seen["metrics"] = [t.metrics for t in scored.trajectories]
    seen["logs"] = [t.logs for t in scored.trajectories]
    seen["original_rewards"] = [t.reward for t in original.trajectories]
    seen["original_metric_keys"] = [sorted(t.metrics) for t in original.trajectories]
    seen["metadata"] = dict(scored.metadata)

    unscored = await judge_score_group(group(f"Be brief. {MARKER}"), url)
    assert unscored is not None
    seen["kept_after_unscored"] = len(unscored.trajectories)
    seen["group_logs"] = list(unscored.logs)

    dead = f"http://127.0.0.1:{refusing_port}"  # bound by the test, never listening: refused
    seen["swallowed"] = await judge_score_group(group("x"), dead, timeout_s=2, swallow_exceptions=True)
    try:
        await judge_score_group(group("x"), dead, timeout_s=2)
        seen["raised"] = None
    except JudgeClientError as exc:
        seen["raised"] = exc.code

    async def rollout(i: int) -> art.TrajectoryGroup:
        return group(f"Rollout {i}.")

    options = {"decoding": "per_answer"}  # further request fields, as a user passes them
    chosen = await judge_score_group(group("Options."), url, run_id="art-options", request_options=options)
    seen["options_kept"] = len(chosen.trajectories)
    try:
        await judge_score_group(group("x"), url, request_options={"step": 3}, swallow_exceptions=True)
        seen["bad_options"] = ""
    except ValueError as exc:
        seen["bad_options"] = str(exc)

    free = await judge_score_group(group("No gold answer.", reference=False), url, run_id="art-free")
    seen["free_kept"] = len(free.trajectories)

    agents = await judge_score_group(tool_group(), url, run_id="art-tools")
    seen["agents_kept"] = len(agents.trajectories)

    gathered = await art.gather_trajectory_groups(
        [rollout(i) for i in range(2)],
        after_each=lambda g: judge_score_group(g, url, run_id="art-gather"),
        pbar_desc=None,
    )
    seen["gathered"] = [len(g.trajectories) for g in gathered]
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2]))), default=str))
