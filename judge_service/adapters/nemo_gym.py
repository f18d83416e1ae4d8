"""NeMo Gym: a resources server whose `/verify` is judged by this service, each rollout a member of its
group (NeMo Gym 0.7; the newest that installs here).

    judge_service:
      resources_servers:
        judge_service:
          entrypoint: ...  # JudgeServiceResourcesServer
          judge_service_url: http://judge:8000
          num_rollouts_per_prompt: 8

Each `/verify` call is one rollout: the task's input is the conversation, the rollout's output text the
answer (or, where it called functions, its output items as turns with the request's tools:
docs/trajectories.md), the row's `expected_answer` the reference. With `num_rollouts_per_prompt` above 1
the rollout is a member of its group (POST /v1/judge/member): the group is `_ng_group_id` when NeMo Gym
sends it, else the task (a hash of its input and expected answer). So the waiting happens in the service,
not in this process, and the server may run with many workers. The reply carries `reward` and
`reward_components` (each criterion's 0-1 score). An answer the judge could not score, or a call that
failed, raises NeMo Gym's JudgeError: its failsafe masks the sample as `judge_failed` instead of
rewarding 0.
`request_options` adds further fields to each member request (`cascade`, `jury`, ...), checked when the
config loads.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from nemo_gym.base_resources_server import (
    BaseMultiRewardVerifyResponse,
    BaseResourcesServerConfig,
    BaseVerifyRequest,
    SimpleResourcesServer,
)
from nemo_gym.judge import JudgeError
from pydantic import ConfigDict, Field

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
from judge_service.adapters.turns import as_answer, as_tools
from judge_service.client import JudgeClientError
from judge_service.schemas import JudgeRequest, MemberRequest


class JudgeServiceConfig(BaseResourcesServerConfig):
    judge_service_url: str
    num_rollouts_per_prompt: int = Field(default=1, ge=1, le=64)
    grader: str | None = None
    run_id: str | None = None
    api_key: str | None = None
    timeout_s: float = Field(default=600.0, gt=0, description="Per /verify call, the group's wait included.")
    member_deadline_s: float | None = Field(default=None, gt=0)
    request_options: MemberRequestOptions = Field(default_factory=dict)


class JudgeServiceVerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    expected_answer: str | None = None
    group_id: str | None = Field(default=None, alias="_ng_group_id")


class JudgeServiceVerifyResponse(BaseMultiRewardVerifyResponse):
    judgement_id: str | None = None
    judge_reason: str | None = None


class JudgeServiceResourcesServer(SimpleResourcesServer):
    config: JudgeServiceConfig

    async def verify(self, body: JudgeServiceVerifyRequest) -> JudgeServiceVerifyResponse:
        conversation = as_conversation(_messages(body.responses_create_params.input))
        reference = reference_of(body.expected_answer)
        answer_body = _rollout_answer(body.response)
        client = shared_clients(
            self.config.judge_service_url, self.config.api_key, self.config.timeout_s
        ).get()
        common: dict[str, Any] = {
            **self.config.request_options,
            "conversation": conversation,
            "tools": as_tools(body.responses_create_params.tools),
            "reference": reference,
            "run_id": self.config.run_id,
        }
        if self.config.grader is not None:
            common["grader"] = self.config.grader
        try:
            if self.config.num_rollouts_per_prompt > 1:
                member = MemberRequest.model_validate(
                    {
                        **common,
                        "group_key": body.group_id or _task_key(conversation, reference),
                        "group_size": self.config.num_rollouts_per_prompt,
                        "answer": answer_body,
                        "deadline_s": self.config.member_deadline_s,
                    }
                )
                reply = await client.member(member)
                answer, judgement_id = reply.answer, reply.judgement_id
            else:
                single = JudgeRequest.model_validate({**common, "answers": [{**answer_body, "id": "0"}]})
                judged = await client.judge(single)
                answer, judgement_id = judged.answers[0], judged.judgement_id
        except JudgeClientError as exc:
            raise JudgeError(f"the judge service failed the rollout: {exc}") from exc
        if answer.score is None:
            raise JudgeError(f"the judge could not score the rollout: {answer.error}")
        return JudgeServiceVerifyResponse(
            **body.model_dump(),
            reward=answer.score,
            reward_components=score_components(answer),
            judgement_id=judgement_id,
            judge_reason=answer_reason(answer),
        )


def _messages(value: Any) -> Any:
    """The task's input as chat messages (text stays text)."""
    if isinstance(value, str):
        return value
    messages = []
    for item in value or []:
        data = item.model_dump() if hasattr(item, "model_dump") else dict(item)
        if "role" in data:
            messages.append({"role": data["role"], "content": content_text(data.get("content"))})
    return messages


def _rollout_answer(response: Any) -> dict[str, Any]:
    """The rollout as an answer, its id the hash of its content (a retried rollout is the same member): its
    reply's text, or, where it called functions, its output items as turns (a call joins the assistant
    turn before it; an output answers its call)."""
    if not any(getattr(item, "type", None) == "function_call" for item in response.output):
        answer: dict[str, Any] = {"id": "", "text": _output_text(response)}
    else:
        turns: list[dict[str, Any]] = []
        for item in response.output:
            kind = getattr(item, "type", None)
            if kind == "message":
                turns.append({"role": "assistant", "content": _message_text(item)})
            elif kind == "function_call":
                call = {"id": item.call_id, "function": {"name": item.name, "arguments": item.arguments}}
                if turns and turns[-1]["role"] == "assistant":
                    turns[-1].setdefault("tool_calls", []).append(call)
                else:
                    turns.append({"role": "assistant", "content": "", "tool_calls": [call]})
            elif kind == "function_call_output":
                turns.append(
                    {"role": "tool", "tool_call_id": item.call_id, "content": content_text(item.output)}
                )
        answer = as_answer("", turns)
    content = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    return {**answer, "id": hashlib.sha256(content.encode()).hexdigest()[:16]}


def _message_text(item: Any) -> str:
    texts = [getattr(p, "text", "") for p in item.content if getattr(p, "type", None) == "output_text"]
    return clean("\n".join(t for t in texts if t))


def _output_text(response: Any) -> str:
    """The rollout's reply: the text of its output messages."""
    texts = [_message_text(item) for item in response.output if getattr(item, "type", None) == "message"]
    return "\n".join(t for t in texts if t)


def _task_key(conversation: list[dict[str, str]], reference: str | None) -> str:
    canonical = json.dumps([conversation, reference], sort_keys=True, ensure_ascii=False)
    return "task-" + hashlib.sha256(canonical.encode()).hexdigest()[:32]
