"""GRPO on GSM8K with AReaL (areal 1.0.4), rewarded by the judge service: AReaL's own GSM8K script with
the workflow swapped for judge_service.adapters.areal.JudgeRLVRWorkflow and the judge's URL in place of
`reward_fn`. Run it as AReaL runs its examples (GPUs, its launcher and a GRPO config), with the judge
service up:

    JUDGE_SERVICE_URL=http://judge:8000 python3 -m areal.infra.launcher.local examples/areal_judge.py \
        --config gsm8k_grpo.yaml
"""

from __future__ import annotations

import os
import sys
from typing import Any

WORKFLOW = "judge_service.adapters.areal.JudgeRLVRWorkflow"  # in place of areal.workflow.rlvr.RLVRWorkflow


def workflow_kwargs(gconfig: Any, tokenizer_path: str, judge_url: str) -> dict[str, Any]:
    """What AReaL's GSM8K script passes to its RLVR workflow, with the judge in place of the rule."""
    return {"judge_url": judge_url, "gconfig": gconfig, "tokenizer": tokenizer_path, "run_id": "gsm8k-judged"}


def main(argv: list[str]) -> None:
    from areal import PPOTrainer
    from areal.api.cli_args import GRPOConfig, load_expr_config
    from areal.dataset import get_custom_dataset
    from areal.utils.hf_utils import load_hf_tokenizer

    config, _ = load_expr_config(argv, GRPOConfig)
    tokenizer = load_hf_tokenizer(config.tokenizer_path)
    train = get_custom_dataset(split="train", dataset_config=config.train_dataset, tokenizer=tokenizer)
    valid = get_custom_dataset(split="test", dataset_config=config.valid_dataset, tokenizer=tokenizer)
    url = os.environ.get("JUDGE_SERVICE_URL", "http://127.0.0.1:8000")
    with PPOTrainer(config, train_dataset=train, valid_dataset=valid) as trainer:
        trainer.train(
            workflow=WORKFLOW,
            workflow_kwargs=workflow_kwargs(config.gconfig, config.tokenizer_path, url),
            eval_workflow=WORKFLOW,
            eval_workflow_kwargs=workflow_kwargs(config.eval_gconfig, config.tokenizer_path, url),
        )


if __name__ == "__main__":
    main(sys.argv[1:])
