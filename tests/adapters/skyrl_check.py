"""Run by tests/adapters/test_skyrl.py inside the SkyRL environment (.venv-skyrl: skyrl 0.3.0, skyrl-gym
0.4.0), with this repository on PYTHONPATH. SkyRL's own command-line entry point (`main_base.main` with
`trainer.override_entrypoint`) builds the config, its `prepare_generator_input` the batch, its gsm8k
environment steps each trajectory, and the generator runs SkyRL's agent loop (and its batched path) on a
scripted policy; the judge is the service at argv[1], a dead one at argv[2]. Prints one JSON object of
what came back."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from skyrl.train.entrypoints import main_base
from skyrl.train.generators.utils import prepare_generator_input
from transformers import PreTrainedTokenizerFast

import judge_service.adapters.skyrl as adapter
from tests.adapters.word_tokenizer import CHAT_TEMPLATE, word_tokenizer

UNSCORED = "[fake judge: leave one answer unscored]"  # judge_service.backends.fake.LEAVE_ONE_UNSCORED
QUESTIONS = {"q1": "How many clips?", "q2": f"How many clips in May? {UNSCORED}"}
# The policy's answers to q1 carry the mark the fake judge is to give (judge_service.backends.fake's
# MARK_ANSWER), so each reward can be checked against its own answer; q2's carry none (a mark would win
# over the unscored marker).
MARKED = [f"the answer is {n} [fake judge: mark {m}]" for n, m in ((72, 5), (70, 3), (7, 1), (72, 4))]
PLAIN = ["the answer is 72", "the answer is 70", "the answer is 7", "the answer is 72"]
CRITERION = "{{name: {}, description: Judged, mark_1: bad, mark_5: good}}"  # YAML flow, as on a shell


def tokenizer() -> PreTrainedTokenizerFast:
    return word_tokenizer(
        [*MARKED, *PLAIN, *QUESTIONS.values(), "system user assistant"], chat_template=CHAT_TEMPLATE
    )


class ScriptedPolicy:
    """SkyRL's inference client as the generator calls it (generate, finish_session): each prompt's calls
    take its answers in turn (in an order SkyRL's scheduling decides), or always `fixed`."""

    def __init__(self, tok: PreTrainedTokenizerFast, fixed: str | None = None) -> None:
        self.tok, self.fixed = tok, fixed
        self.calls: collections.Counter[tuple[int, ...]] = collections.Counter()

    async def generate(self, engine_input: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        texts, ids = [], []
        for prompt in engine_input["prompt_token_ids"]:
            answers = PLAIN if UNSCORED in self.tok.decode(prompt) else MARKED
            text = self.fixed or answers[self.calls[tuple(prompt)] % len(answers)]
            self.calls[tuple(prompt)] += 1
            texts.append(text)
            ids.append(self.tok(text)["input_ids"] + [self.tok.eos_token_id])
        return {"responses": texts, "response_ids": ids, "stop_reasons": ["stop"] * len(texts)}

    async def finish_session(self, session_id: Any) -> None:
        pass


def rows() -> list[dict[str, Any]]:
    """Two prompts of SkyRL's dataset form; the second asks the fake judge to leave one answer unscored."""
    return [
        {
            "prompt": [{"role": "user", "content": question}],
            "env_class": "gsm8k",
            "env_extras": {"reward_spec": {"method": "rule", "ground_truth": "72"}},
            "uid": uid,
        }
        for uid, question in QUESTIONS.items()
    ]


def parsed(args: list[str]) -> adapter.JudgedTrainConfig:
    """SkyRL's own main parses and validates the command line; it stops where training would start."""
    seen: list[Any] = []
    adapter.initialize_ray = lambda cfg: None  # no Ray cluster here
    adapter.skyrl_entrypoint = type("Remote", (), {"remote": staticmethod(seen.append)})
    adapter.ray = type("Ray", (), {"get": staticmethod(lambda ref: ref)})
    sys.argv = ["main_base", *args]
    main_base.main()
    (cfg,) = seen
    return cfg


def example_args() -> list[str]:
    """The arguments examples/skyrl_judge.sh gives SkyRL's main (read by a `python` that prints them)."""
    with tempfile.TemporaryDirectory() as shim:
        python = Path(shim, "python")
        python.write_text(
            f"#!/bin/sh\nexec {sys.executable} -c 'import json, sys; print(json.dumps(sys.argv))' \"$@\"\n"
        )
        python.chmod(0o755)
        done = subprocess.run(
            ["bash", str(Path(__file__).parents[2] / "examples" / "skyrl_judge.sh")],
            env={**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            check=True,
        )
    args = json.loads(done.stdout)
    assert args[:3] == ["-c", "-m", "skyrl.train.entrypoints.main_base"], args
    return list(args[3:])


def config(url: str, *extra: str) -> adapter.JudgedTrainConfig:
    """The judge's command line, as a user gives it to SkyRL's main."""
    return parsed(
        [
            "trainer.override_entrypoint=judge_service.adapters.skyrl",
            f"generator.judge.url={url}",
            f"generator.judge.criteria=[{CRITERION.format('correctness')}, {CRITERION.format('tone')}]",
            "generator.judge.timeout_s=20",
            "trainer.run_name=skyrl-run",
            "trainer.logger=console",
            "generator.n_samples_per_prompt=4",
            *extra,
        ]
    )


async def generate(
    cfg: Any, tok: PreTrainedTokenizerFast, step: int, fixed: str | None = None
) -> dict[str, Any]:
    exp = object.__new__(adapter.JudgedPPOExp)  # get_generator needs none of the experiment's state
    generator = exp.get_generator(cfg, tok, ScriptedPolicy(tok, fixed))
    batch, uids = prepare_generator_input(rows(), 4, None, "gsm8k", "train", step)
    output = await generator.generate(batch, disable_tqdm=True)
    return {
        "class": type(generator).__name__,
        "run_id": generator.judge.run_id,
        "uids": uids,
        "texts": [tok.decode(r, skip_special_tokens=True) for r in output["response_ids"]],
        "rewards": output["rewards"],
        "loss_masks": output["loss_masks"],
        "env_metrics": output["env_metrics"],
        "rollout_metrics": output["rollout_metrics"],
    }


async def main(url: str, dead_port: str) -> dict[str, Any]:
    tok = tokenizer()
    cfg = config(url)
    seen: dict[str, Any] = {
        "config": type(cfg).__name__,
        "example": {"judge_url": parsed(example_args()).generator.judge.url},
        "criteria": [c["name"] for c in cfg.generator.judge.criteria],
        "agent_loop": await generate(cfg, tok, step=1),
        "first_try": await generate(cfg, tok, step=5, fixed=PLAIN[0]),
        "retried": await generate(cfg, tok, step=5, fixed=PLAIN[0]),  # the same answers again
        "batched": await generate(config(url, "generator.batched=true"), tok, step=2),
        "options": await generate(
            config(url, "generator.judge.request_options={decoding: per_answer}"), tok, 6
        ),
        "dead": await generate(
            config(f"http://127.0.0.1:{dead_port}", "generator.judge.timeout_s=3"), tok, 3
        ),
    }
    try:
        await generate(config(url, "generator.step_wise_trajectories=true"), tok, step=4)
    except ValueError as exc:
        seen["step_wise"] = str(exc)
    try:
        await generate(config(url, "generator.judge.request_options={decodng: per_answer}"), tok, step=7)
    except ValueError as exc:
        seen["bad_options"] = str(exc)
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
