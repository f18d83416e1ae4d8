"""TRL: the judge as a GRPO reward function (GRPOTrainer and AsyncGRPO, trl 0.27 and later).

    from judge_service.adapters.trl import judge_reward
    trainer = GRPOTrainer(..., reward_funcs=[judge_reward("http://judge:8000", num_generations=8,
                                                          run_id="run-42")])

Each call of the reward function judges the batch's groups (groups.py) in POST /v1/judge/batch requests
and returns one score per completion, in order. An unscored completion, or every completion of a group
the judge failed, is None: TRL (1.6 and later) masks it instead of rewarding 0, and the reason is
logged. If the service cannot be reached at all, the call raises (after the client's retries): a reward
function that quietly returned nothing would train on noise. Judgements are stored under `run_id` and
the trainer's global step; with a `run_id` each request carries an Idempotency-Key derived from the run,
the step, the process rank and the batch's content, so a retried step replays what was judged.

A dataset column `item` (a dict of grader fields per row, which the policy never sees) is sent as each
group's `item`, for graders written as code and RFT grader templates (docs/graders/code.md).
`request_options` adds further request fields to every group, e.g. `{"cascade": {"rule": "numbers",
"judge": "ties"}}` or `{"jury": {"escalate": 1}}` (checked when the function is made).

With `share_gpus=1` (or 2) the judge sleeps between steps' rewards, giving the trainer its GPU memory
(gpu_sharing.py, docs/operations/sharing-gpus.md).

With TRL's `log_metric` and `log_extra` (1.0 and later) the function reports `<name>/unscored_share` and
`<name>/latency_s`, and each completion's marks and reasons as the `<name>_reason` column.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from judge_service.adapters.gpu_sharing import sharing
from judge_service.adapters.groups import (
    BatchResults,
    GroupOptions,
    LoopClients,
    PreparedBatch,
    judge_async,
    judge_sync,
    prepare,
)
from judge_service.adapters.groups import request_options as request_options_checked
from judge_service.client import JudgeClient, RetryPolicy
from judge_service.schemas import Criterion

RewardFunc = Callable[..., Awaitable[list[float | None]]]
DEFAULT_CRITERIA = ("correctness", "helpfulness", "tone", "format")


class _Scorer:
    """The shared part of every reward function here: where the service is, and a trainer call in, a
    batch prepared."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None,
        timeout_s: float,
        num_generations: int | None,
        grader: str | None,
        criteria: Sequence[Criterion | Mapping[str, Any]] | None,
        reference_column: str,
        run_id: str | None,
        request_options: Mapping[str, Any] | None,
    ) -> None:
        self.url = url
        self.api_key = api_key
        self.retry = RetryPolicy(timeout_s=timeout_s, deadline_s=timeout_s)  # a call never outlasts it
        self.num_generations = num_generations
        self.reference_column = reference_column
        self.options = GroupOptions(
            grader=grader, criteria=criteria, run_id=run_id, request=request_options_checked(request_options)
        )

    def loop_clients(self) -> LoopClients:
        return LoopClients(self.url, api_key=self.api_key, retry=self.retry)

    def sync_client(self) -> JudgeClient:
        return JudgeClient(self.url, api_key=self.api_key, retry=self.retry)

    def prepare(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> PreparedBatch:
        if self.reference_column not in kwargs:
            raise KeyError(
                f"the dataset has no column {self.reference_column!r} holding the reference reply; add one, "
                "or pass reference_column= the name of the column that holds it"
            )
        state = kwargs.get("trainer_state")
        step = getattr(state, "global_step", None)
        return prepare(
            prompts,
            completions,
            kwargs[self.reference_column],
            num_generations=self.num_generations,
            options=self.options,
            step=step,
            scope=f"r{os.environ.get('RANK', '0')}",
            items=kwargs.get("item"),
        )


def _report(results: BatchResults, kwargs: Mapping[str, Any], name: str, started: float) -> None:
    log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
    if log_metric is not None:
        log_metric(f"{name}/unscored_share", results.unscored_share)
        log_metric(f"{name}/latency_s", time.perf_counter() - started)
    if log_extra is not None:
        log_extra(f"{name}_reason", results.reasons)


def _named(fn: Any, name: str) -> Any:
    fn.__name__ = fn.__qualname__ = name  # TRL logs rewards/<__name__>/mean
    return fn


def judge_reward(
    url: str,
    *,
    num_generations: int | None = None,
    grader: str | None = None,
    criteria: Sequence[Criterion | Mapping[str, Any]] | None = None,
    reference_column: str = "reference",
    run_id: str | None = None,
    name: str = "judge",
    api_key: str | None = None,
    timeout_s: float = 600.0,
    request_options: Mapping[str, Any] | None = None,
    share_gpus: int | None = None,
) -> RewardFunc:
    """An async reward function for TRL's `reward_funcs` (module docstring). `num_generations` should be
    GRPOConfig.num_generations: it lets the function tell a split group from two groups of one prompt.
    `share_gpus` (1 or 2): the judge is woken before each call's judging and put to sleep at that vLLM
    level after it (gpu_sharing.py; the key needs `admin` too)."""
    shared = sharing(share_gpus)
    scorer = _Scorer(
        url,
        api_key=api_key,
        timeout_s=timeout_s,
        num_generations=num_generations,
        grader=grader,
        criteria=criteria,
        reference_column=reference_column,
        run_id=run_id,
        request_options=request_options,
    )
    clients = scorer.loop_clients()

    async def reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        started = time.perf_counter()
        client = clients.get()
        batch = scorer.prepare(prompts, completions, kwargs)
        if shared is None:
            results = await judge_async(client, batch)
        else:
            await shared.wake(client)
            try:
                results = await judge_async(client, batch)
            finally:
                await shared.sleep(client)  # the backward pass and the optimizer get the memory
        _report(results, kwargs, name, started)
        return results.scores

    return _named(reward, name)


def judge_criterion_rewards(
    url: str,
    *,
    criteria: Sequence[Criterion | Mapping[str, Any]] | None = None,
    num_generations: int | None = None,
    grader: str | None = None,
    reference_column: str = "reference",
    run_id: str | None = None,
    name: str = "judge",
    api_key: str | None = None,
    timeout_s: float = 600.0,
    request_options: Mapping[str, Any] | None = None,
) -> list[RewardFunc]:
    """One reward function per criterion (`<name>_<criterion>`), all answered by a single judge call per
    batch, so GRPOConfig.reward_weights weighs the criteria. `criteria`: the rubric (Criterion models or
    dicts); default the service's four (correctness, helpfulness, tone, format)."""
    scorer = _Scorer(
        url,
        api_key=api_key,
        timeout_s=timeout_s,
        num_generations=num_generations,
        grader=grader,
        criteria=criteria,
        reference_column=reference_column,
        run_id=run_id,
        request_options=request_options,
    )
    clients = scorer.loop_clients()
    names = (
        [c.name if isinstance(c, Criterion) else str(c["name"]) for c in criteria]
        if criteria
        else list(DEFAULT_CRITERIA)
    )
    # TRL calls every reward function with the same batch, concurrently on one loop: the first call judges,
    # the others await its result. Keyed by the batch's content; only the latest batch is kept.
    shared: dict[tuple[Any, ...], asyncio.Task[BatchResults]] = {}

    def batch_key(prompts: list[Any], completions: list[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        step = getattr(kwargs.get("trainer_state"), "global_step", None)
        return (step, repr(prompts), repr(completions))

    def make(criterion: str, first: bool) -> RewardFunc:
        async def reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
            started = time.perf_counter()
            key = batch_key(prompts, completions, kwargs)
            task = shared.get(key)
            if task is None:
                shared.clear()
                batch = scorer.prepare(prompts, completions, kwargs)
                task = shared[key] = asyncio.ensure_future(judge_async(clients.get(), batch))
            results = await asyncio.shield(task)
            if first:
                _report(results, kwargs, name, started)
            return results.criterion_scores(criterion)

        return _named(reward, f"{name}_{criterion}")

    return [make(criterion, i == 0) for i, criterion in enumerate(names)]


def judge_reward_sync(
    url: str,
    *,
    num_generations: int | None = None,
    grader: str | None = None,
    criteria: Sequence[Criterion | Mapping[str, Any]] | None = None,
    reference_column: str = "reference",
    run_id: str | None = None,
    name: str = "judge",
    api_key: str | None = None,
    timeout_s: float = 600.0,
    request_options: Mapping[str, Any] | None = None,
    share_gpus: int | None = None,
) -> Callable[..., list[float | None]]:
    """judge_reward for trainers that call only plain functions (TRL before 0.27, Unsloth)."""
    shared = sharing(share_gpus)
    scorer = _Scorer(
        url,
        api_key=api_key,
        timeout_s=timeout_s,
        num_generations=num_generations,
        grader=grader,
        criteria=criteria,
        reference_column=reference_column,
        run_id=run_id,
        request_options=request_options,
    )
    client = scorer.sync_client()

    def reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        started = time.perf_counter()
        batch = scorer.prepare(prompts, completions, kwargs)
        if shared is None:
            results = judge_sync(client, batch)
        else:
            shared.wake_sync(client)
            try:
                results = judge_sync(client, batch)
            finally:
                shared.sleep_sync(client)
        _report(results, kwargs, name, started)
        return results.scores

    return _named(reward, name)
