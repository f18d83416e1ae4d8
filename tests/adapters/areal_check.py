"""Run by tests/adapters/test_areal.py inside the AReaL environment (.venv-areal: areal 1.0.4, CPU torch),
with this repository on PYTHONPATH. AReaL's own RemoteInfEngine._resolve_workflow turns the workflow's import
path and kwargs into a workflow, wrapped in its GroupedRolloutWorkflow for `gconfig.n_samples` as its
trainer does, and each row's episodes run on a scripted inference engine; the judge is the service at
argv[1], a dead one at argv[2]. Prints one JSON object of what came back."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from areal.api import ModelRequest, ModelResponse
from areal.api.cli_args import GenerationHyperparameters
from areal.infra.remote_inf_engine import RemoteInfEngine
from areal.utils import stats_tracker
from transformers import PreTrainedTokenizerFast

from tests.adapters.word_tokenizer import CHAT_TEMPLATE, word_tokenizer

UNSCORED = "[fake judge: leave one answer unscored]"  # judge_service.backends.fake.LEAVE_ONE_UNSCORED
# Answers carry the mark the fake judge is to give (judge_service.backends.fake.MARK_ANSWER); the row that
# asks for an unscored answer gets answers without marks (a mark would win over its marker).
MARKED = [f"the answer is {n} [fake judge: mark {m}]" for n, m in ((72, 5), (70, 3), (72, 5), (72, 4))]
PLAIN = ["the answer is 72", "the answer is 70", "the answer is 7", "the answer is 72"]
QUESTION = "How many clips?"


def tokenizer() -> PreTrainedTokenizerFast:
    return word_tokenizer(
        [*MARKED, *PLAIN, QUESTION, UNSCORED, "system user assistant"], chat_template=CHAT_TEMPLATE
    )


class ScriptedEngine:
    """AReaL's InferenceEngine as the workflow calls it (agenerate): a row's episodes take its answers in
    the order they ask."""

    def __init__(self, tok: PreTrainedTokenizerFast) -> None:
        self.tok = tok
        self.calls = 0

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        answers = PLAIN if UNSCORED in self.tok.decode(req.input_ids) else MARKED
        text = answers[self.calls % len(answers)]
        self.calls += 1
        ids = self.tok(text)["input_ids"] + [self.tok.eos_token_id]
        return ModelResponse(
            input_tokens=list(req.input_ids),
            output_tokens=ids,
            output_logprobs=[-0.5] * len(ids),
            output_versions=[0] * len(ids),
            stop_reason="stop",
            tokenizer=self.tok,
        )


def example() -> ModuleType:
    """examples/areal_judge.py: its workflow path and kwargs are what the trainer is given here."""
    spec = importlib.util.spec_from_file_location(
        "areal_judge", Path(__file__).parents[2] / "examples" / "areal_judge.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workflow(url: str, n_samples: int, **kwargs: Any) -> Any:
    """As AReaL's trainer resolves `train(workflow=..., workflow_kwargs=...)` for its group size."""
    trainer_side = SimpleNamespace(config=SimpleNamespace(agent=None), logger=logging.getLogger("areal"))
    gconfig = GenerationHyperparameters(n_samples=n_samples, max_new_tokens=16)
    script = example()
    workflow_kwargs = {**script.workflow_kwargs(gconfig, "unused", url), "tokenizer": tokenizer(), **kwargs}
    return RemoteInfEngine._resolve_workflow(
        trainer_side, script.WORKFLOW, workflow_kwargs, group_size=n_samples
    )


async def episode(resolved: Any, question: str) -> dict[str, Any]:
    """One row's episodes, as AReaL's workflow executor runs them: the trajectories and the stats."""
    engine = ScriptedEngine(tokenizer())
    result = await resolved.arun_episode(
        engine, {"messages": [{"role": "user", "content": question}], "answer": "72"}
    )
    stats = stats_tracker.export_all(reduce_group=None)
    if result is None:
        return {"result": None, "stats": stats}
    tok = tokenizer()
    return {
        "rewards": result["rewards"].tolist(),
        "texts": [
            tok.decode([t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=True)
            for ids, mask in zip(result["input_ids"].tolist(), result["loss_mask"].tolist(), strict=True)
        ],
        "stats": stats,
    }


async def main(url: str, dead_port: str) -> dict[str, Any]:
    grouped = workflow(
        url,
        4,
        run_id="areal-run",
        criteria=[{"name": "correctness", "description": "Right", "mark_1": "wrong", "mark_5": "right"}],
    )
    options = workflow(url, 4, run_id="areal-options", request_options={"decoding": "per_answer"})
    try:
        workflow(url, 4, request_options={"grader": "numbers"})
        bad_options = ""
    except ValueError as exc:
        bad_options = str(exc)
    return {
        "options": await episode(options, QUESTION),
        "bad_options": bad_options,
        "wrapper": type(grouped).__name__,
        "inner": type(grouped.workflow).__name__,
        "group": await episode(grouped, QUESTION),
        "again": await episode(grouped, QUESTION),  # the same question at the next step: a new group
        "unscored": await episode(grouped, f"{QUESTION} {UNSCORED}"),
        "alone": await episode(workflow(url, 1, run_id="areal-alone"), QUESTION),
        "example_run_id": workflow(url, 1).common["run_id"],  # as examples/areal_judge.py sets it
        "dead": await episode(workflow(f"http://127.0.0.1:{dead_port}", 4, timeout_s=3), QUESTION),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2])), default=float))
