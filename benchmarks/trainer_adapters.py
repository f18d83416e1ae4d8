"""What the trainer adapters cost, side by side in one run (fake judge in a service process):

1. The TRL reward function's added latency per batch over the raw HTTP call it makes: the same 8 groups
   of 8 answers as one POST /v1/judge/batch, sent raw (httpx, a prepared JSON body, an Idempotency-Key as
   the adapter sends) and through `judge_reward` (group assembly, validation, the typed client, mapping
   back), alternating.
2. The wall time of a 2-step TRL GRPO run on the CPU (tiny model, examples/trl_grpo.py) rewarded by the
   service vs by a constant reward function, alternating.

    .venv/bin/python -m benchmarks trainer_adapters [--rounds 30] [--trl-rounds 3]
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import tempfile
import time
import uuid
from typing import Any

import httpx

from benchmarks import REPO_ROOT
from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.groups import make_groups
from benchmarks.report import log, markdown_table
from benchmarks.servers import server_process, workdir
from judge_service.adapters.trl import judge_reward


def _trl_example() -> Any:
    spec = importlib.util.spec_from_file_location("trl_grpo_example", REPO_ROOT / "examples" / "trl_grpo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def adapter_overhead(url: str, rounds: int) -> dict[str, float]:
    bodies = make_groups(8, 8, seed=11, run_id=None)
    prompts = [b["conversation"][-1]["content"] for b in bodies for _ in b["answers"]]
    completions = [a["text"] for b in bodies for a in b["answers"]]
    references = [b["reference"] for b in bodies for _ in b["answers"]]
    raw_body = {
        "groups": [
            {k: v for k, v in b.items() if k in ("conversation", "reference", "answers")} for b in bodies
        ]
    }
    reward = judge_reward(url, num_generations=8)
    raw_ms: list[float] = []
    adapter_ms: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for i in range(rounds + 3):  # the first 3 of each warm up
            started = time.perf_counter()
            # Keyed like the adapter's calls, so the service does the same work for both.
            reply = await client.post(
                "/v1/judge/batch", json=raw_body, headers={"Idempotency-Key": uuid.uuid4().hex}
            )
            reply.raise_for_status()
            raw = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            scores = await reward(prompts=prompts, completions=completions, reference=references)
            adapted = (time.perf_counter() - started) * 1000
            assert len(scores) == 64
            if i >= 3:
                raw_ms.append(raw)
                adapter_ms.append(adapted)
    raw_median, adapter_median = statistics.median(raw_ms), statistics.median(adapter_ms)
    return {
        "raw_ms_p50": raw_median,
        "adapter_ms_p50": adapter_median,
        "added_ms_p50": adapter_median - raw_median,
        "adapter_over_raw": adapter_median / raw_median,
    }


def trl_wall_times(url: str, rounds: int) -> dict[str, float]:
    example = _trl_example()
    words = " ".join(p + " " + r for p, r in example.PROMPTS).split()

    async def constant(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        return [0.5] * len(completions)

    def run(judged: bool) -> float:
        model, tokenizer = example.tiny_policy(words)
        with tempfile.TemporaryDirectory() as out:
            trainer = example.trainer(
                url,
                model=model,
                tokenizer=tokenizer,
                train=example.dataset(),
                steps=2,
                output_dir=out,
                run_id="bench",
            )
            if not judged:
                constant.__name__ = "constant"
                trainer.reward_funcs = [constant]
            started = time.perf_counter()
            trainer.train()
            return time.perf_counter() - started

    run(True), run(False)  # warm-up: imports, first compiles
    judged_s, constant_s = [], []
    for _ in range(rounds):
        judged_s.append(run(True))
        constant_s.append(run(False))
    judged_median, constant_median = statistics.median(judged_s), statistics.median(constant_s)
    return {
        "judged_s_p50": judged_median,
        "constant_s_p50": constant_median,
        "judged_over_constant": judged_median / constant_median,
    }


def run(args: Any) -> Outcome:
    with workdir("adapters") as tmp:
        env = {"JUDGE_BACKEND": "fake", "JUDGE_HOME_DIR": str(tmp)}
        with server_process(env, tmp / "server.log") as (url, _):
            log("adapter overhead: raw POST /v1/judge/batch vs judge_reward, 8 groups x 8 answers")
            overhead = asyncio.run(adapter_overhead(url, args.rounds))
            log("TRL: 2-step GRPO runs, judged vs constant reward")
            trl = trl_wall_times(url, args.trl_rounds)
    rows = [
        ["raw POST /v1/judge/batch (8 x 8), ms p50", overhead["raw_ms_p50"]],
        ["judge_reward for the same batch, ms p50", overhead["adapter_ms_p50"]],
        ["added by the adapter, ms", overhead["added_ms_p50"]],
        ["adapter / raw", overhead["adapter_over_raw"]],
        ["TRL 2 steps, judged reward, s p50", trl["judged_s_p50"]],
        ["TRL 2 steps, constant reward, s p50", trl["constant_s_p50"]],
        ["judged / constant", trl["judged_over_constant"]],
    ]
    return Outcome({"overhead": overhead, "trl": trl}, markdown_table(["measure", "value"], rows))


EXPERIMENT = Experiment(
    description="What the trainer adapters cost: TRL's reward function over the raw batch call, and a 2-step "
    "GRPO run rewarded by the service vs a constant.",
    options=[option("--rounds", 30), option("--trl-rounds", 3)],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
