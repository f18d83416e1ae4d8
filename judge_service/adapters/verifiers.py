"""verifiers (0.4.0, `verifiers.v1`): a judge plugin, so any taskset's rollouts are judged by this service
with one entry in the task config, each rollout a member of its group.

    [[env.taskset.task.judges]]
    id = "judge-service-verifiers"    # the top-level module judge_service_verifiers names this judge
    judge_service_url = "http://judge:8000"
    group_size = 8                # the run's rollouts per task (vf-eval -r, the trainer's group size)

verifiers scores every rollout on its own (`Task.score` runs each plugged judge's `score(task, trace)`), so
a group is assembled in the service (POST /v1/judge/member): every rollout of one task sends its reply as a
member of the group `vf-<task hash>-<group_scope>`, and each call returns when the whole group has been
judged, in one judgement. `group_scope` separates runs and steps that show the same task again: by default
a token drawn when this process starts (every rollout of a group must then be scored by one process, as
`vf-eval` and a single env server do); set it per run or step when rollouts are spread over processes.
With `group_size` 1 each rollout is judged alone. The conversation is the task's system prompt and prompt,
the answer the rollout's own turns (its reply alone where it made no calls; its turns, tool calls and
results where it did, with the trace's tools: docs/trajectories.md), the reference the task field
`reference_field` (default `answer`).
`request_options` adds further request fields to every rollout's request (`cascade`, `jury`, `comparison`,
...), checked when the config loads.

The reward is the answer's 0-1 score; each criterion's score is recorded as a metric
(`<reward name>_<criterion>`), and the judgement id and reason in `trace.info["judge_service"]`. A rollout
the judge could not score, or a call that failed, raises: verifiers records the error on the rollout
(as its own judges do: "a judge failure must error the rollout, not score the model 0"), and the rollout
is retried or left out, never rewarded 0. A retried rollout keeps its trace id, its member answer id, so
the service answers it from the stored judgement instead of judging again; `timeout_s` bounds each call,
the group's wait included.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from judge_service.adapters.groups import (
    MemberRequestOptions,
    answer_reason,
    as_conversation,
    clean,
    content_text,
    reference_of,
    score_components,
    shared_clients,
)
from judge_service.adapters.turns import as_answer, as_tools, own_turns
from judge_service.client import JudgeClientError
from judge_service.schemas import JudgeRequest, MemberRequest

__all__ = ["JudgeServiceJudge"]

PROCESS_SCOPE = uuid.uuid4().hex[:12]  # the default group scope: one per process


class JudgeServiceJudgeConfig(vf.JudgeConfig):
    id: str = "judge-service-verifiers"
    judge_service_url: str = Field(default_factory=lambda: os.environ.get("JUDGE_SERVICE_URL", ""))
    group_size: int = Field(default=1, ge=1, le=64, description="Rollouts per task, judged as one group.")
    grader: str | None = None
    run_id: str | None = None
    api_key: str | None = Field(default_factory=lambda: os.environ.get("JUDGE_SERVICE_API_KEY") or None)
    reference_field: str = "answer"
    group_scope: str = ""
    timeout_s: float = Field(default=600.0, gt=0, description="Per rollout, the group's wait included.")
    member_deadline_s: float | None = Field(default=None, gt=0)
    request_options: MemberRequestOptions = Field(default_factory=dict)


class JudgeServiceJudge(vf.Judge[float, JudgeServiceJudgeConfig]):
    """Scores a rollout with the judge service (module docstring)."""

    async def score(self, task: vf.TaskData, trace: vf.Trace) -> float:
        config = self.config
        if not config.judge_service_url:
            raise ValueError("set judge_service_url in the judge's config (or JUDGE_SERVICE_URL)")
        common: dict[str, Any] = {
            **config.request_options,
            "conversation": as_conversation(_messages(task)),
            "tools": as_tools(trace.tools),
            "reference": reference_of(getattr(task, config.reference_field, None)),
            "run_id": config.run_id,
        }
        if config.grader is not None:
            common["grader"] = config.grader
        own = own_turns(trace.messages)
        answer_body = (
            as_answer(trace.id[:64], own) if own else {"id": trace.id[:64], "text": clean(trace.last_reply)}
        )
        client = shared_clients(config.judge_service_url, config.api_key, config.timeout_s).get()
        try:
            if config.group_size > 1:
                scope = config.group_scope or PROCESS_SCOPE
                member = MemberRequest.model_validate(
                    {
                        **common,
                        "group_key": f"vf-{trace.task.hash or trace.task.key}-{scope}",
                        "group_size": config.group_size,
                        "answer": answer_body,
                        "deadline_s": config.member_deadline_s,
                    }
                )
                reply = await client.member(member)
                answer, judgement_id = reply.answer, reply.judgement_id
            else:
                single = JudgeRequest.model_validate({**common, "answers": [{**answer_body, "id": "0"}]})
                judged = await client.judge(single, idempotency_key=f"vf-{trace.id}")
                answer, judgement_id = judged.answers[0], judged.judgement_id
        except JudgeClientError as exc:
            raise RuntimeError(f"the judge service failed the rollout: {exc}") from exc
        if answer.score is None:
            raise RuntimeError(f"the judge could not score the rollout: {answer.error}")
        for name, value in score_components(answer).items():
            trace.record_metric(f"{self.reward_name}_{name}", value)
        trace.info["judge_service"] = {"judgement_id": judgement_id, "reason": answer_reason(answer)}
        return answer.score


def _messages(task: vf.TaskData) -> list[dict[str, str]]:
    """The task's system prompt and prompt as chat messages."""
    messages = [{"role": "system", "content": task.system_prompt}] if task.system_prompt else []
    if isinstance(task.prompt, str):
        messages.append({"role": "user", "content": task.prompt})
    for message in task.prompt if isinstance(task.prompt, list) else []:
        data = message.model_dump() if hasattr(message, "model_dump") else dict(message)
        messages.append({"role": str(data.get("role", "user")), "content": content_text(data.get("content"))})
    return messages
