"""TRL 1.16's GRPOTrainer on the CPU, rewarded by the service in another process (fake judge): whole
groups per reward call, the reward logged, an unscored answer masked (NaN) while training goes on, the
judgements stored under the trainer's run and steps, and a retried step replayed, not judged again."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from judge_service.adapters.groups import SplitGroupError
from judge_service.adapters.trl import judge_criterion_rewards, judge_reward, judge_reward_sync
from judge_service.backends.fake import LEAVE_ONE_UNSCORED
from tests.adapters.conftest import example
from tests.service_process import ServiceProcess

trl_example = example("trl_grpo")

PROMPTS = [
    ("How do I share the report?", "Click Share and pick the client."),
    (f"How do I reset my password? {LEAVE_ONE_UNSCORED}", "Use Forgot password on the sign-in page."),
    ("Where do I change the currency?", "Settings, then Billing, then Currency."),
    ("How do I export a chart?", "Open the chart menu and choose Export."),
]


class Recorded:
    """Wraps a reward function, keeping every call's arguments and result."""

    def __init__(self, reward: Any) -> None:
        self.reward = reward
        self.calls: list[tuple[dict[str, Any], list[float | None]]] = []
        self.steps: list[int] = []  # global_step at each call (the TrainerState object is shared)
        self.__name__ = reward.__name__

    async def __call__(self, **kwargs: Any) -> list[float | None]:
        self.steps.append(kwargs["trainer_state"].global_step)
        result = await self.reward(**kwargs)
        self.calls.append((kwargs, result))
        return result


def run_judgements(service: ServiceProcess, run_id: str) -> list[dict[str, Any]]:
    page = httpx.get(f"{service.url}/v1/runs/{run_id}/judgements", params={"limit": 500}).json()
    return list(page["items"])


def test_grpo_trains_on_judge_rewards(service: ServiceProcess, tmp_path: Path) -> None:
    words = " ".join(p + " " + r for p, r in PROMPTS).split()
    model, tokenizer = trl_example.tiny_policy(words)
    before = [p.detach().clone() for p in model.parameters()]
    recorded = Recorded(judge_reward(service.url, num_generations=4, run_id="trl-run"))
    trainer = trl_example.trainer(
        service.url,
        model=model,
        tokenizer=tokenizer,
        train=trl_example.dataset(PROMPTS),
        steps=2,
        output_dir=str(tmp_path),
        run_id="trl-run",
    )
    trainer.reward_funcs = [recorded]  # the same function, recorded (TRL calls reward_funcs by position)
    trainer.train()

    assert trainer.state.global_step == 2
    assert recorded.steps == [0, 1]
    for kwargs, scores in recorded.calls:  # whole groups: 8 completions, 4 of each of two prompts
        prompts = kwargs["prompts"]
        assert len(prompts) == len(scores) == 8
        assert prompts[0:4] == [prompts[0]] * 4 and prompts[4:8] == [prompts[4]] * 4
    all_scores = [s for _, scores in recorded.calls for s in scores]
    assert sum(s is None for s in all_scores) == 1  # the marked prompt's first shown answer
    logged = [e for e in trainer.state.log_history if "rewards/judge/mean" in e]
    assert len(logged) == 2 and all(math.isfinite(e["rewards/judge/mean"]) for e in logged)
    assert sum(e["judge/unscored_share"] for e in logged) == pytest.approx(1 / 8)
    assert any(not p.equal(q) for p, q in zip(before, model.parameters(), strict=True))  # it trained

    stored = run_judgements(service, "trl-run")
    assert sorted(j["step"] for j in stored) == [0, 0, 1, 1]
    assert all(len(j["answers"]) == 4 for j in stored)

    # A retried step (the same call again) replays the stored judgements: same ids, nothing new stored.
    kwargs, scores = recorded.calls[-1]
    kwargs = {k: v for k, v in kwargs.items() if k not in ("log_metric", "log_extra")}
    kwargs["trainer_state"] = SimpleNamespace(global_step=recorded.steps[-1])
    again = asyncio.run(recorded.reward(**kwargs))
    assert again == scores
    replayed = run_judgements(service, "trl-run")
    assert sorted(j["judgement_id"] for j in replayed) == sorted(j["judgement_id"] for j in stored)


def test_a_split_group_is_refused_saying_how_to_configure(service: ServiceProcess) -> None:
    reward = judge_reward(service.url, num_generations=4)
    prompts = ["a", "a", "a", "b", "b", "b"]  # 6 completions: groups of 4 arrived cut
    with pytest.raises(SplitGroupError, match="per_device_train_batch_size x steps_per_generation"):
        asyncio.run(reward(prompts=prompts, completions=["x"] * 6, reference=["r"] * 6))


def test_conversational_prompts_criterion_rewards_and_the_sync_twin(service: ServiceProcess) -> None:
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    completions = [[{"role": "assistant", "content": text}] for text in ("4", "four", "5", "22")]
    call = {"prompts": [prompt] * 4, "completions": completions, "reference": ["4"] * 4}
    logged: dict[str, float] = {}
    extras: dict[str, list[str]] = {}
    rewards = judge_criterion_rewards(service.url, num_generations=4, run_id="trl-criteria")
    assert [r.__name__ for r in rewards] == [
        "judge_correctness",
        "judge_helpfulness",
        "judge_tone",
        "judge_format",
    ]

    async def all_at_once() -> list[list[float | None]]:  # as TRL does: concurrently, one loop
        extra = {"log_metric": logged.__setitem__, "log_extra": extras.__setitem__}
        return await asyncio.gather(*(r(**call, **extra) for r in rewards))

    per_criterion = asyncio.run(all_at_once())
    assert all(len(scores) == 4 and all(s is not None for s in scores) for scores in per_criterion)
    assert len(run_judgements(service, "trl-criteria")) == 1  # one judge call for the four functions
    assert logged["judge/unscored_share"] == 0 and len(extras["judge_reason"]) == 4
    assert extras["judge_reason"][0].startswith("correctness ")

    sync = judge_reward_sync(service.url, num_generations=4, run_id="trl-sync")
    scores = sync(**call)
    assert len(scores) == 4 and all(s is not None and 0 <= s <= 1 for s in scores)
    (judged,) = run_judgements(service, "trl-sync")
    stored = httpx.get(f"{service.url}/v1/judgements/{judged['judgement_id']}").json()
    assert [m["role"] for m in stored["request"]["conversation"]] == ["system", "user"]


def test_a_missing_reference_column_says_which_to_add(service: ServiceProcess) -> None:
    reward = judge_reward(service.url, num_generations=2)
    with pytest.raises(KeyError, match="reference_column"):
        asyncio.run(reward(prompts=["a", "a"], completions=["x", "y"], answer=["r", "r"]))


def test_an_item_column_is_sent_as_each_groups_item(service: ServiceProcess) -> None:
    reward = judge_reward(service.url, num_generations=2, run_id="trl-item")
    item = {"facts": ["share", "client"], "forbidden": ["email"]}
    call = {"prompts": ["How do I share?"] * 2, "completions": ["Click Share.", "Email it."]}
    scores = asyncio.run(reward(**call, reference=["Click Share."] * 2, item=[item, item]))
    assert len(scores) == 2
    (judged,) = run_judgements(service, "trl-item")
    stored = httpx.get(f"{service.url}/v1/judgements/{judged['judgement_id']}").json()
    assert stored["request"]["item"] == item


def test_request_options_go_with_every_group_and_a_typo_stops_at_once(service: ServiceProcess) -> None:
    cascade = {"rule": "numbers", "judge": "ties"}
    reward = judge_reward(
        service.url, num_generations=2, run_id="trl-options", request_options={"cascade": cascade}
    )
    call = {"prompts": ["How many clips?"] * 2, "completions": ["72 clips.", "50 clips."]}
    scores = asyncio.run(reward(**call, reference=["Natalia sold 72 clips."] * 2))
    assert scores == [1.0, 0.0]  # numbers told them apart: no judge call
    (judged,) = run_judgements(service, "trl-options")
    stored = httpx.get(f"{service.url}/v1/judgements/{judged['judgement_id']}").json()
    assert stored["request"]["cascade"] == {**cascade, "threshold": 1.0} and stored["cascade"] == "rule_only"
    assert [a["scored_by"] for a in stored["answers"]] == ["rule", "rule"]
    with pytest.raises(ValueError, match=r"cascade\.judge"):
        judge_reward(service.url, request_options={"cascade": {"rule": "numbers", "judge": "sometimes"}})
    with pytest.raises(ValueError, match="cannot set grader"):
        judge_reward(service.url, request_options={"grader": "jury"})


def test_with_share_gpus_the_judge_sleeps_between_steps_and_is_checked_on_each_wake(
    service: ServiceProcess, tmp_path: Path
) -> None:
    words = " ".join(p + " " + r for p, r in PROMPTS).split()
    model, tokenizer = trl_example.tiny_policy(words)
    recorded = Recorded(judge_reward(service.url, num_generations=4, run_id="trl-shared", share_gpus=1))
    trainer = trl_example.trainer(
        service.url,
        model=model,
        tokenizer=tokenizer,
        train=trl_example.dataset(PROMPTS),
        steps=3,
        output_dir=str(tmp_path),
        run_id="trl-shared",
    )
    trainer.reward_funcs = [recorded]
    try:
        trainer.train()
        assert trainer.state.global_step == 3 and recorded.steps == [0, 1, 2]
        engine = httpx.get(f"{service.url}/v1/engine").json()
        assert engine["state"] == "asleep" and engine["level"] == 1  # asleep between the steps' rewards
        metrics = httpx.get(f"{service.url}/metrics").text
        # Woken before steps 1 and 2 (awake already before step 0), each wake checked against the probes.
        assert 'judge_engine_wake_checks_total{outcome="passed"} 2.0' in metrics
        assert sorted(j["step"] for j in run_judgements(service, "trl-shared")) == [0, 0, 1, 1, 2, 2]
    finally:
        httpx.post(f"{service.url}/v1/engine/wake")  # the module's other tests judge on


def test_share_gpus_takes_a_sleep_level() -> None:
    with pytest.raises(ValueError, match="1 or 2"):
        judge_reward("http://127.0.0.1:9", num_generations=4, share_gpus=3)
