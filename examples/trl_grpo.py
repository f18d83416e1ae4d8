"""GRPO with TRL, rewarded by the judge service.

    # the service, in another terminal: make serve   (or JUDGE_BACKEND=fake for a dry run)
    python examples/trl_grpo.py --judge http://127.0.0.1:8000              # CPU: a tiny model built here
    python examples/trl_grpo.py --judge http://judge:8000 --model Qwen/Qwen2.5-0.5B-Instruct --steps 100

Each training step sends the step's groups (num_generations completions of one prompt) to the service
in one request; the judge scores every answer seeing its whole group. Scores come back as the reward;
an answer the judge could not score is None, which TRL masks instead of rewarding 0.
"""

from __future__ import annotations

import argparse
import tempfile

from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)
from trl import GRPOConfig, GRPOTrainer

from judge_service.adapters.trl import judge_reward

PROMPTS = [
    (
        "How do I share the quarterly report with a client?",
        "Open the report, click Share and pick the client.",
    ),
    ("How do I reset my password?", "Click Forgot password on the sign-in page and follow the email."),
    ("Where do I change the invoice currency?", "Settings, then Billing, then Currency."),
    ("How do I export a chart as an image?", "Open the chart menu and choose Export as PNG."),
]


def tiny_policy(words: list[str]) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A 2-layer Qwen2-shaped model and a word-level tokenizer over `words`, built here: no download."""
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    for word in words:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="left",
    )
    config = Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    return Qwen2ForCausalLM(config), wrapped


def dataset(prompts: list[tuple[str, str]] = PROMPTS) -> Dataset:
    return Dataset.from_dict({"prompt": [p for p, _ in prompts], "reference": [r for _, r in prompts]})


def trainer(
    judge_url: str,
    *,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    train: Dataset,
    steps: int,
    output_dir: str,
    run_id: str,
    num_generations: int = 4,
    groups_per_step: int = 2,
    cpu: bool = True,
) -> GRPOTrainer:
    config = GRPOConfig(
        output_dir=output_dir,
        use_cpu=cpu,
        bf16=not cpu,
        gradient_checkpointing=False,
        per_device_train_batch_size=num_generations * groups_per_step,  # whole groups on each process
        num_generations=num_generations,
        max_completion_length=8 if cpu else 256,
        max_steps=steps,
        logging_steps=1,
        learning_rate=1e-3 if cpu else 1e-6,
        report_to="none",
        save_strategy="no",
    )
    reward = judge_reward(judge_url, num_generations=num_generations, run_id=run_id)
    return GRPOTrainer(
        model=model, processing_class=tokenizer, reward_funcs=[reward], args=config, train_dataset=train
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--judge", default="http://127.0.0.1:8000", help="the judge service URL")
    parser.add_argument("--model", help="a causal LM to train (default: a tiny one built here, for the CPU)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--run-id", default="trl-grpo-example")
    args = parser.parse_args()
    if args.model:
        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    else:
        words = " ".join(p + " " + r for p, r in PROMPTS).split()
        model, tokenizer = tiny_policy(words)
    with tempfile.TemporaryDirectory() as out:
        run = trainer(
            args.judge,
            model=model,
            tokenizer=tokenizer,
            train=dataset(),
            steps=args.steps,
            output_dir=out,
            run_id=args.run_id,
            cpu=args.model is None,
        )
        run.train()
    for entry in run.state.log_history:
        if "rewards/judge/mean" in entry:
            print(f"step {entry['step']}: rewards/judge/mean {entry['rewards/judge/mean']:.4f}")


if __name__ == "__main__":
    main()
