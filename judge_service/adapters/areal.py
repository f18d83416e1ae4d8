"""AReaL (areal 1.0.4): the judge as the reward of AReaL's RLVR workflow, each answer a member of its group.

One line: the workflow AReaL's examples name, swapped for this one, with the judge's URL in place of
`reward_fn` (`examples/areal_judge.py`):

    trainer.train(
        workflow="judge_service.adapters.areal.JudgeRLVRWorkflow",
        workflow_kwargs={"judge_url": "http://judge:8000", "gconfig": config.gconfig,
                         "tokenizer": config.tokenizer_path},
    )

AReaL runs a prompt's `gconfig.n_samples` episodes concurrently on one data row (its GroupedRolloutWorkflow)
and asks each episode for its own reward as soon as its answer is generated, while other prompts' rollouts
stream on. So each answer is sent as a member (POST /v1/judge/member) of its prompt's group; the call
returns once the group's last answer has arrived and the group has been judged, in one judgement. The
episodes of one row claim one group key when they start (a key is never reused, even for the same row
again); `gconfig.n_samples` 1 judges each answer alone. The conversation is the row's prompt (AReaL's
`data_extract_prompt_fn`, default `messages`), the answer the decoded completion, the reference the row's
`reference_key` (default `answer`, as AReaL's GSM8K rows carry it). `request_options` adds further
request fields to every answer's request (`cascade`, `jury`, `comparison`, ...), checked when the workflow
is built.

AReaL's own reward wrapper returns 0 when a reward times out; this workflow does not use it. An answer the
judge did not score, or a call that failed or outlasted `timeout_s` (the group's wait included), ends its
episode with None, AReaL's way to reject a trajectory: its group trains on the rest, and the reason is
logged and counted (`judge_unscored` in AReaL's rollout stats). Each criterion's score is recorded beside
AReaL's `reward` (`judge_<criterion>`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from areal import workflow_context
from areal.api import InferenceEngine, ModelResponse
from areal.api.cli_args import GenerationHyperparameters
from areal.utils import stats_tracker
from areal.utils.perf_tracer import trace_session
from areal.workflow.rlvr import (
    RLVRWorkflow,
    default_data_extract_prompt_fn,
    default_get_input_ids_fn,
)

from judge_service.adapters.groups import (
    as_conversation,
    clean,
    reference_of,
    score_components,
    shared_clients,
)
from judge_service.adapters.groups import request_options as request_options_checked
from judge_service.client import JudgeClientError
from judge_service.schemas import AnswerResult, JudgeRequest, MemberRequest

__all__ = ["JudgeRLVRWorkflow"]

log = logging.getLogger("judge_service.adapters.areal")

PROCESS_SCOPE = uuid.uuid4().hex[:12]  # group keys of this process: never those of another
# RLVRWorkflow builds a process pool for a callable reward_fn; a path defers that to the first episode,
# and is replaced below before any episode runs, so no pool is ever made.
_DEFERRED = "judge_service.adapters.areal.JudgeRLVRWorkflow"
_MEMBER: ContextVar[tuple[str, int]] = ContextVar("judge_service_areal_member")


class Unscored(Exception):
    """The judge gave this answer no score: its episode is rejected, never rewarded 0."""


class JudgeRLVRWorkflow(RLVRWorkflow):
    """AReaL's RLVR workflow with the judge service as its reward (module docstring)."""

    def __init__(
        self,
        gconfig: GenerationHyperparameters,
        tokenizer: Any,
        judge_url: str | None = None,
        *,
        grader: str | None = None,
        criteria: Sequence[Mapping[str, Any]] | None = None,
        run_id: str | None = None,
        reference_key: str = "answer",
        timeout_s: float = 600.0,
        member_deadline_s: float | None = None,
        api_key: str | None = None,
        request_options: Mapping[str, Any] | None = None,
        enable_thinking: bool = False,
        get_input_ids_fn: Callable[..., list[int]] | str = default_get_input_ids_fn,
        data_extract_prompt_fn: Callable[[dict[str, Any]], Any] | str = default_data_extract_prompt_fn,
    ) -> None:
        super().__init__(
            reward_fn=_DEFERRED,
            gconfig=gconfig,
            tokenizer=tokenizer,
            enable_thinking=enable_thinking,
            get_input_ids_fn=get_input_ids_fn,
            data_extract_prompt_fn=data_extract_prompt_fn,
        )
        self.reward_fn = self._compute_rewards  # not a path: arun_episode never loads a reward function
        self.judge_url = judge_url or os.environ.get("JUDGE_SERVICE_URL") or ""
        if not self.judge_url:
            raise ValueError("give judge_url (or set JUDGE_SERVICE_URL) to the judge service's URL")
        self.group_size = max(int(gconfig.n_samples), 1)
        options = request_options_checked(request_options, members=True)
        self.common: dict[str, Any] = {**options, "run_id": run_id}
        if grader is not None:
            self.common["grader"] = grader
        if criteria is not None:
            self.common["criteria"] = [dict(c) for c in criteria]
        self.reference_key = reference_key
        self.timeout_s = timeout_s
        self.member_deadline_s = member_deadline_s
        self.api_key = api_key or os.environ.get("JUDGE_SERVICE_API_KEY") or None
        self.groups = GroupKeys(self.group_size)

    async def arun_episode(self, engine: InferenceEngine, data: dict[str, Any]) -> dict[str, Any] | None:
        member = _MEMBER.set(self.groups.claim(data))  # first, before the group's episodes interleave
        try:
            return await super().arun_episode(engine, data)
        except Unscored as exc:
            log.warning("the episode is rejected: %s", exc)
            stats_tracker.get(workflow_context.stat_scope()).scalar(judge_unscored=1.0)
            return None
        finally:
            _MEMBER.reset(member)

    @trace_session("reward")
    async def _compute_rewards(
        self, resp: ModelResponse, prompt_str: str, task_data: dict[str, Any]
    ) -> float:
        text = clean(self.tokenizer.decode(resp.output_tokens, skip_special_tokens=True))
        answer = await self._judge(text, task_data)
        if answer.score is None:
            raise Unscored(f"the judge could not score the answer: {answer.error}")
        stats = stats_tracker.get(workflow_context.stat_scope())
        stats.scalar(judge_unscored=0.0, **{f"judge_{k}": v for k, v in score_components(answer).items()})
        return answer.score

    async def _judge(self, text: str, task_data: dict[str, Any]) -> AnswerResult:
        key, index = _MEMBER.get()
        reference = task_data.get(self.reference_key)
        common = {
            **self.common,
            "conversation": as_conversation(self.data_extract_prompt_fn(task_data)),
            "reference": reference_of(reference),
        }
        if isinstance(task_data.get("item"), Mapping):  # the row's grader fields (code graders)
            common["item"] = dict(task_data["item"])
        client = shared_clients(self.judge_url, self.api_key, self.timeout_s).get()
        try:
            async with asyncio.timeout(self.timeout_s):
                if self.group_size > 1:
                    request = MemberRequest.model_validate(
                        {
                            **common,
                            "group_key": key,
                            "group_size": self.group_size,
                            "answer": {"id": str(index), "text": text},
                            "deadline_s": self.member_deadline_s,
                        }
                    )
                    answer = (await client.member(request)).answer
                else:
                    single = JudgeRequest.model_validate({**common, "answers": [{"id": "0", "text": text}]})
                    answer = (await client.judge(single)).answers[0]
        except TimeoutError as exc:
            raise Unscored(f"the judge did not answer within {self.timeout_s:g} s") from exc
        except JudgeClientError as exc:
            raise Unscored(f"the judge service failed the answer: {exc}") from exc
        return answer


class GroupKeys:
    """One group key per group of episodes. AReaL starts a row's `group_size` episodes together on the same
    data dict; each claims (key, its index) before its first await. The key is forgotten once all have
    claimed it, so the same row in a later step (even the same dict) opens a new group."""

    def __init__(self, group_size: int) -> None:
        self.group_size = group_size
        self._open: dict[int, tuple[dict[str, Any], str, int]] = {}  # id(data) -> (data, key, claimed)
        self._numbers = itertools.count()

    def claim(self, data: dict[str, Any]) -> tuple[str, int]:
        found = self._open.get(id(data))
        if found is None or found[0] is not data:
            found = (data, f"areal-{PROCESS_SCOPE}-{next(self._numbers)}", 0)
        _, key, claimed = found
        if claimed + 1 >= self.group_size:
            self._open.pop(id(data), None)
        else:
            self._open[id(data)] = (data, key, claimed + 1)
        return key, claimed
