"""verl (0.9.1; the reward loop): the judge as a reward, per sample as verl asks, judged as a group.

verl scores one sample per call; no hook of its sees a group. Two entry points:

1. `compute_score`, for `reward.custom_reward_function` (path `pkg://judge_service.adapters.verl`):
   a sample is judged alone (a group of one), or as a member of its group (POST /v1/judge/member) when
   its `extra_info` carries `group_key` and `group_size`. The prompt comes from `extra_info["prompt"]`
   (text or chat messages), else `extra_info["question"]`; the reference is verl's ground truth, and
   `extra_info["item"]` (a dict of grader fields) the request's `item`.
2. `JudgeGroupRewardManager`, for `reward.reward_manager.source=importlib` (module path
   `pkg://judge_service.adapters.verl`, name `JudgeGroupRewardManager`): every sample is a member of the
   group verl's `uid` names, of size `actor_rollout_ref.rollout.n`; the conversation is the sample's
   `raw_prompt`. No dataset change is needed.

Both read their settings from `reward.custom_reward_function.reward_kwargs` (`judge_url`, else the
JUDGE_SERVICE_URL variable; `grader`, `criteria` (names), `run_id`, `timeout_s`, `fallback_score`,
`member_deadline_s`, `api_key`, `request_options`: further request fields such as
`{"cascade": {"rule": "numbers", "judge": "ties"}}`, checked on the first call). verl writes scores into
a tensor and takes the extra-info keys of the first sample for all, so each sample returns a float and
the same keys: `score`, `judge_ok` (1.0 or 0.0),
`judge_status` (a number, STATUS below) and `judge_<criterion>` per criterion. An unscored sample gets
`fallback_score` with `judge_ok = 0.0`: look at `judge_ok` before trusting a score. Each call enforces
`timeout_s` (retries included), so a slow judge cannot freeze training; past it the sample is
`timeout`. Answers with the same text in one group are one member: such a group completes at its
deadline, with the members present.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from judge_service.adapters.groups import (
    as_conversation,
    clean,
    reference_of,
    request_options,
    shared_clients,
)
from judge_service.client import JudgeClientError
from judge_service.schemas import AnswerResult, JudgeRequest, MemberRequest

log = logging.getLogger("judge_service.adapters.verl")

STATUS = {"scored": 0.0, "unscored": 1.0, "incomplete": 2.0, "failed": 3.0, "timeout": 4.0}
DEFAULT_CRITERIA = ("correctness", "helpfulness", "tone", "format")


async def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, float]:
    """One sample's reward (module docstring)."""
    info = extra_info or {}
    settings = _Settings(reward_kwargs)
    prompt = info.get("prompt", info.get("question"))
    if prompt is None:
        raise ValueError(
            "the judge needs the sample's prompt: put it in extra_info['prompt'] (text or chat messages) "
            "or extra_info['question']"
        )
    group_key, group_size = info.get("group_key"), info.get("group_size")
    member = None
    if group_key is not None and group_size is not None:
        member = settings.member(
            str(group_key), int(group_size), prompt, solution_str, ground_truth, info.get("item")
        )
    return await settings.score(member, prompt, solution_str, ground_truth, info.get("item"))


class JudgeGroupRewardManager(RewardManagerBase):
    """Each sample a member of its `uid`'s group of `rollout.n` (module docstring)."""

    def __init__(self, config: Any, tokenizer: Any, compute_score: Any = None, **_: Any) -> None:
        super().__init__(config, tokenizer, compute_score)
        custom = config.reward.get("custom_reward_function") or {}
        self.settings = _Settings(dict(custom.get("reward_kwargs") or {}))
        self.group_size = int(config.actor_rollout_ref.rollout.n)

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        item = data[-1]
        responses = item.batch["responses"]
        valid = int(item.batch["attention_mask"][-responses.shape[-1] :].sum())
        text = await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.tokenizer.decode(responses[:valid], skip_special_tokens=True)
        )
        extras = item.non_tensor_batch
        prompt = _plain(extras.get("raw_prompt"))
        ground_truth = (extras.get("reward_model") or {}).get("ground_truth")
        item = (extras.get("extra_info") or {}).get("item")
        member = self.settings.member(str(extras["uid"]), self.group_size, prompt, text, ground_truth, item)
        result = await self.settings.score(member, prompt, text, ground_truth, item)
        return {"reward_score": result["score"], "reward_extra_info": result}


class _Settings:
    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        url = kwargs.get("judge_url") or os.environ.get("JUDGE_SERVICE_URL")
        if not url:
            raise ValueError("set reward_kwargs.judge_url (or JUDGE_SERVICE_URL) to the judge service's URL")
        self.url = str(url)
        self.grader = kwargs.get("grader")
        self.criteria: Sequence[str] = tuple(kwargs.get("criteria") or DEFAULT_CRITERIA)
        self.run_id = kwargs.get("run_id")
        self.timeout_s = float(kwargs.get("timeout_s", 300.0))
        self.fallback = float(kwargs.get("fallback_score", 0.0))
        self.deadline_s = kwargs.get("member_deadline_s")
        self.api_key = kwargs.get("api_key") or os.environ.get("JUDGE_SERVICE_API_KEY")
        self.request = request_options(kwargs.get("request_options"), members=True)

    def _common(self, prompt: Any, ground_truth: Any, item: Any = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            **self.request,
            "conversation": as_conversation(_plain(prompt)),
            "reference": reference_of(ground_truth),
            "run_id": self.run_id,
        }
        if item is not None:  # the row's grader fields (code graders, RFT grader templates)
            body["item"] = dict(item)
        if self.grader is not None:
            body["grader"] = self.grader
        return body

    def member(
        self, group_key: str, group_size: int, prompt: Any, text: str, ground_truth: Any, item: Any = None
    ) -> MemberRequest:
        answer = clean(text)
        body = {
            **self._common(prompt, ground_truth, item),
            "group_key": group_key,
            "group_size": group_size,
            "answer": {"id": hashlib.sha256(answer.encode()).hexdigest()[:16], "text": answer},
            "deadline_s": self.deadline_s,
        }
        return MemberRequest.model_validate(body)

    async def score(
        self, member: MemberRequest | None, prompt: Any, text: str, ground_truth: Any, item: Any = None
    ) -> dict[str, float]:
        client = shared_clients(self.url, self.api_key, self.timeout_s).get()
        try:
            async with asyncio.timeout(self.timeout_s):
                if member is not None:
                    reply = await client.member(member)
                    answer, incomplete = reply.answer, reply.group_status == "incomplete"
                else:
                    single = JudgeRequest.model_validate(
                        {
                            **self._common(prompt, ground_truth, item),
                            "answers": [{"id": "0", "text": clean(text)}],
                        }
                    )
                    answer, incomplete = (await client.judge(single)).answers[0], False
        except TimeoutError:
            log.warning(
                "the judge did not answer within %g s; the sample gets the fallback score", self.timeout_s
            )
            return self._result(None, "timeout")
        except JudgeClientError as exc:
            log.warning("the judge failed the sample (%s); it gets the fallback score", exc)
            return self._result(None, "failed")
        return self._result(answer, "incomplete" if incomplete else answer.status)

    def _result(self, answer: AnswerResult | None, status: str) -> dict[str, float]:
        """The same keys for every sample: verl reads the first sample's keys from all."""
        scored = answer is not None and answer.score is not None
        result = {
            "score": answer.score if answer is not None and answer.score is not None else self.fallback,
            "judge_ok": 1.0 if scored else 0.0,
            "judge_status": STATUS.get(status, STATUS["failed"]),
        }
        marks = answer.criteria or {} if answer is not None else {}
        for name in self.criteria:
            mark = marks.get(name)
            result[f"judge_{name}"] = mark.score if scored and mark is not None else self.fallback
        return result


def _plain(value: Any) -> Any:
    """verl keeps prompts in numpy object arrays: back to lists of dicts (or the text)."""
    if isinstance(value, str) or value is None:
        return value or ""
    return [dict(m) for m in list(value)]
