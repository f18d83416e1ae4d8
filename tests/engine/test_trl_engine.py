"""TRL's GRPOTrainer rewarded by the service on the real engine (the embedded judge): two steps of one
group of four, each reward call one judge call that sees the whole group, stored under the run's steps."""

from __future__ import annotations

import math
from pathlib import Path

import httpx
import pytest

from judge_service.adapters.trl import judge_reward
from tests.adapters.conftest import example

pytestmark = pytest.mark.engine

trl_example = example("trl_grpo")


def test_two_grpo_steps_on_the_real_judge(served: httpx.Client, tmp_path: Path) -> None:
    url = str(served.base_url).rstrip("/")
    words = " ".join(p + " " + r for p, r in trl_example.PROMPTS).split()
    model, tokenizer = trl_example.tiny_policy(words)
    seen: list[list[float | None]] = []
    reward = judge_reward(url, num_generations=4, run_id="trl-engine")

    async def recorded(**kwargs: object) -> list[float | None]:
        scores = await reward(**kwargs)
        seen.append(scores)
        return scores

    recorded.__name__ = "judge"
    trainer = trl_example.trainer(
        url,
        model=model,
        tokenizer=tokenizer,
        train=trl_example.dataset(),
        steps=2,
        output_dir=str(tmp_path),
        run_id="trl-engine",
        groups_per_step=1,
    )
    trainer.reward_funcs = [recorded]
    trainer.train()

    assert trainer.state.global_step == 2 and [len(s) for s in seen] == [4, 4]
    assert all(s is None or 0 <= s <= 1 for scores in seen for s in scores)
    assert sum(s is not None for scores in seen for s in scores) > 0  # the real judge scored answers
    logged = [e["rewards/judge/mean"] for e in trainer.state.log_history if "rewards/judge/mean" in e]
    assert len(logged) == 2 and any(math.isfinite(v) for v in logged)
    stored = served.get("/v1/runs/trl-engine/judgements").json()["items"]
    assert sorted((j["step"], len(j["answers"]), j["attempts"] >= 1) for j in stored) == [
        (0, 4, True),
        (1, 4, True),
    ]
