"""OpenPipe ART: score a TrajectoryGroup with the judge service, as `art.rewards.ruler_score_group` does
with RULER, judged here by this service in one call that sees the whole group.

    from judge_service.adapters.art import judge_score_group
    groups = await art.gather_trajectory_groups(
        (art.TrajectoryGroup(rollout(model, scenario) for _ in range(8)) for scenario in scenarios),
        after_each=lambda group: judge_score_group(group, "http://judge:8000", swallow_exceptions=True),
    )

As RULER does, it copies the trajectories (the group passed in is not changed), keeps each old reward in
`metrics["independent_reward"]`, sets `reward` and `metrics["judge_score"]` (plus `judge_<criterion>`
per criterion), and logs the judge's reasons on each trajectory. The conversation the judge sees is the
messages all trajectories share; each trajectory's answer is the rest, as turns with their tool calls and
results where it has them, and the tools the trajectories were given go with the group (turns.py,
docs/trajectories.md). A trajectory the judge could not
score is dropped from the group (ART needs a number; 0 would be a lie), with the reason in the group's
logs. With `swallow_exceptions`, a failed call returns None (ART's gather drops the group), as in ART.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from judge_service.adapters.groups import reason_of, reference_of
from judge_service.adapters.groups import request_options as request_options_checked
from judge_service.adapters.turns import as_answer, as_tools, as_turns
from judge_service.client import AsyncJudgeClient, RetryPolicy
from judge_service.schemas import Criterion, JudgeRequest

if TYPE_CHECKING:
    import art

log = logging.getLogger("judge_service.adapters.art")


async def judge_score_group(
    group: art.TrajectoryGroup,
    url: str | None = None,
    *,
    client: AsyncJudgeClient | None = None,
    reference: str | None = None,
    criteria: Sequence[Criterion | Mapping[str, Any]] | None = None,
    grader: str | None = None,
    run_id: str | None = None,
    step: int | None = None,
    api_key: str | None = None,
    timeout_s: float = 600.0,
    swallow_exceptions: bool = False,
    request_options: Mapping[str, Any] | None = None,
) -> art.TrajectoryGroup | None:
    """The group judged (module docstring). `reference`: the reference reply; default the group's
    `metadata["reference"]`, else none (the judge then compares the answers with each other only).
    `request_options`: further request fields (`cascade`, `jury`, `comparison`, ...); a wrong one raises
    ValueError whatever `swallow_exceptions` says."""
    import art

    extra = request_options_checked(request_options)

    for trajectory in group.trajectories:
        if trajectory.additional_histories:
            raise ValueError("trajectories with additional histories are not supported (nor by RULER)")
    copies = [_copy(t) for t in group.trajectories]
    for trajectory in copies:
        trajectory.metrics["independent_reward"] = trajectory.reward
    try:
        request = _request(group, copies, reference, criteria, grader, run_id, step, extra)
        if client is not None:
            judgement = await client.judge(request)
        else:
            if url is None:
                raise ValueError("give the judge service's url or a client")
            retry = RetryPolicy(timeout_s=timeout_s, deadline_s=timeout_s)
            async with AsyncJudgeClient(url, api_key=api_key, retry=retry) as own:
                judgement = await own.judge(request)
    except Exception as exc:
        if swallow_exceptions:
            log.warning("judging the group failed; the group is dropped: %s", exc)
            return None
        raise
    kept = []
    dropped: list[str] = []
    by_id = {a.id: a for a in judgement.answers}
    for i, trajectory in enumerate(copies):
        answer = by_id.get(f"t{i}")
        if answer is None or answer.score is None:
            dropped.append(f"trajectory {i}: {reason_of(answer)}")
            continue
        trajectory.reward = answer.score
        trajectory.metrics["judge_score"] = answer.score
        for name, mark in (answer.criteria or {}).items():
            trajectory.metrics[f"judge_{name}"] = mark.score
        trajectory.log(f"judge ({judgement.judgement_id}): {reason_of(answer, max_chars=2000)}")
        kept.append(trajectory)
    result = art.TrajectoryGroup(kept, exceptions=group.exceptions, metadata=dict(group.metadata))
    for line in dropped:
        log.warning("dropped an unscored %s", line)
        result.log(f"judge dropped unscored {line}")
    return result


def _copy(trajectory: art.Trajectory) -> art.Trajectory:
    """A copy sharing nothing mutable, made field by field as ART's RULER does (deep-copying a whole
    trajectory can meet objects that do not copy)."""
    return trajectory.__class__(
        exchanges=trajectory.exchanges.model_copy(deep=True),
        messages_and_choices=trajectory.messages_and_choices.copy(),
        tools=trajectory.tools.copy() if trajectory.tools else None,
        additional_histories=[],
        reward=trajectory.reward,
        metrics=trajectory.metrics.copy(),
        metadata=trajectory.metadata.copy(),
        logs=trajectory.logs.copy(),
    )


def _request(
    group: art.TrajectoryGroup,
    trajectories: list[art.Trajectory],
    reference: str | None,
    criteria: Sequence[Criterion | Mapping[str, Any]] | None,
    grader: str | None,
    run_id: str | None,
    step: int | None,
    extra: Mapping[str, Any],
) -> JudgeRequest:
    chats = [t.history().as_chat_completions_history() for t in trajectories]
    histories = [list(chat.messages) for chat in chats]
    shared = _shared_prefix(histories)
    conversation, made = as_turns(histories[0][:shared]) if shared else ([], None)
    if reference is None:
        found = group.metadata.get("reference")
        reference = found if isinstance(found, str) else None
    group_key = group.metadata.get("group_key")
    body: dict[str, Any] = {
        **extra,
        "conversation": conversation or [{"role": "user", "content": ""}],
        "tools": as_tools(chats[0].tools),
        "reference": reference_of(reference),
        "answers": [as_answer(f"t{i}", h[shared:], made) for i, h in enumerate(histories)],
        "run_id": run_id,
        "step": step,
        "group_key": group_key if isinstance(group_key, str) else None,
    }
    if grader is not None:
        body["grader"] = grader
    if criteria is not None:
        body["criteria"] = [c.model_dump() if isinstance(c, Criterion) else dict(c) for c in criteria]
    return JudgeRequest.model_validate(body)


def _shared_prefix(histories: list[list[Any]]) -> int:
    """How many leading messages every trajectory has in common (what the task gave, not the answers)."""
    shortest = min(len(h) for h in histories)
    n = 0
    while n < shortest and all(h[n] == histories[0][n] for h in histories[1:]):
        n += 1
    # A lone trajectory (or identical ones) still has an answer: its last message at least.
    return min(n, shortest - 1) if shortest else 0
