"""Run by tests/adapters/test_verl.py inside the verl environment (.venv-verl: verl 0.9.1, CPU torch), with
this repository on PYTHONPATH. Drives verl's own `load_reward_manager` and `run_single` on hand-built
DataProto items against the service at argv[1]; prints one JSON object of what came back."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.trainer.ppo.reward import load_reward_manager

from tests.adapters.word_tokenizer import word_tokenizer

MARKER = "[fake judge: leave one answer unscored]"  # judge_service.backends.fake.LEAVE_ONE_UNSCORED
ADAPTER = "pkg://judge_service.adapters.verl"
WORDS = ["click", "share", "pick", "the", "client", "email", "it", "you", "cannot", "use", "button"]


def tokenizer() -> PreTrainedTokenizerFast:
    return word_tokenizer(WORDS)


def config(url: str, manager: dict[str, Any], run_id: str, **kwargs: Any) -> Any:
    return OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": ADAPTER,
                    "name": "compute_score",
                    "reward_kwargs": {
                        "judge_url": url,
                        "run_id": run_id,
                        "fallback_score": -1.0,
                        "timeout_s": 60,
                        **kwargs,
                    },
                },
                "reward_manager": manager,
                "sandbox_fusion": None,
            },
            "actor_rollout_ref": {"rollout": {"n": 4}},
        }
    )


def item(
    tok: PreTrainedTokenizerFast, text: str, *, uid: str, question: str, extra: dict[str, Any]
) -> DataProto:
    ids = tok(text)["input_ids"]
    prompt_ids = [3, 4]
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([prompt_ids]),
            "responses": torch.tensor([ids]),
            "attention_mask": torch.ones(1, len(prompt_ids) + len(ids), dtype=torch.int64),
        },
        non_tensors={
            "uid": np.array([uid], dtype=object),
            "data_source": np.array(["judge"], dtype=object),
            "raw_prompt": np.array([[{"role": "user", "content": question}]], dtype=object),
            "reward_model": np.array([{"ground_truth": "click share pick the client"}], dtype=object),
            "extra_info": np.array([extra], dtype=object),
        },
    )


TEXTS = ["click share", "use the share button", "email it", "you cannot"]


async def main(url: str) -> dict[str, Any]:
    tok = tokenizer()
    seen: dict[str, Any] = {}
    group_manager = load_reward_manager(
        config(
            url,
            {"name": "JudgeGroupRewardManager", "source": "importlib", "module": {"path": ADAPTER}},
            "verl-group",
        ),
        tok,
    )
    seen["manager_class"] = type(group_manager).__name__
    items = [item(tok, t, uid="u1", question="How do I share the report?", extra={}) for t in TEXTS]
    results = await asyncio.gather(*(group_manager.run_single(i) for i in items))
    seen["group"] = results
    marked = [item(tok, t, uid="u2", question=f"How do I share it? {MARKER}", extra={}) for t in TEXTS]
    seen["group_unscored"] = await asyncio.gather(*(group_manager.run_single(i) for i in marked))

    naive = load_reward_manager(config(url, {"name": "naive", "source": "register"}, "verl-single"), tok)
    seen["naive_class"] = type(naive).__name__
    alone = item(tok, "click share", uid="u3", question="", extra={"prompt": "How do I share the report?"})
    seen["alone"] = await naive.run_single(alone)
    members = [
        item(
            tok,
            t,
            uid="u4",
            question="",
            extra={"prompt": "How do I share?", "group_key": "g4", "group_size": 2},
        )
        for t in TEXTS[:2]
    ]
    seen["by_extra_info"] = await asyncio.gather(*(naive.run_single(m) for m in members))
    group_manager_config = {
        "name": "JudgeGroupRewardManager",
        "source": "importlib",
        "module": {"path": ADAPTER},
    }
    chosen = config(url, group_manager_config, "verl-options", request_options={"decoding": "per_answer"})
    options_manager = load_reward_manager(chosen, tok)
    options = [item(tok, t, uid="u5", question="How do I print it?", extra={}) for t in TEXTS]
    seen["options"] = await asyncio.gather(*(options_manager.run_single(i) for i in options))
    try:
        load_reward_manager(config(url, group_manager_config, "verl-bad", request_options={"seed": 1}), tok)
        seen["bad_options"] = ""
    except ValueError as exc:
        seen["bad_options"] = str(exc)
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=float))
