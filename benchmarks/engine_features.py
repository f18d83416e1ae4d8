"""Which vLLM features matter for this workload: prefix caching, structured outputs, bounded output length.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks engine_features [--groups 8] [--loose-max-tokens 512]

Two engines are loaded side by side in this process, identical except for automatic prefix caching
(A: on, the service default; B: off). The judge requests are the service's own, in the group decoding (one
request a group): the groups go once through JudgeService.grade on engine A (warm-up and recording), and
the recorded GenerationRequests are then replayed straight into the engines, --groups at a time:

* prefix caching: the baseline requests on A and on B in ABBA order. A's cache is emptied before each
  of its rounds, so what it reuses is what production reuses: the rubric/system prompt across groups.
* structured outputs and output bound, on A, in the palindromic order base, no-schema, loose,
  no-schema+loose, no-schema+loose, loose, no-schema, base (linear drift cancels): "no-schema" drops
  the JSON schema (json_schema=None, free text), "loose" replaces the computed max_tokens bound
  (parser.max_output_tokens) by --loose-max-tokens.

Reported: groups/s, completion tokens per group, replies that parse completely, and each variant's
groups/s ratio to its baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.engine import RecordingBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.experiment import Column, Experiment, Run, Sweep, col, option, ratio_col, shared
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import log
from benchmarks.servers import env_override, workdir
from judge_service.backends.base import Generation, GenerationRequest, JudgeBackend
from judge_service.judging.llm.parser import parse_judgement
from judge_service.schemas import JudgeRequest

NAME = "engine_features"
PALINDROME = ["base", "no_schema", "loose", "no_schema_loose"]


def _variant(requests: list[GenerationRequest], name: str, loose: int) -> list[GenerationRequest]:
    if name in ("no_schema", "no_schema_loose"):
        requests = [replace(r, json_schema=None) for r in requests]
    if name in ("loose", "no_schema_loose"):
        requests = [replace(r, max_tokens=loose) for r in requests]
    return requests


def _complete(reply: Generation, expected: dict[str, Any]) -> bool:
    ids = list(expected["required"])
    criteria = list(expected["properties"][ids[0]]["required"])
    return parse_judgement(reply.text, ids, criteria).complete


async def _round(
    engine: JudgeBackend,
    requests: list[GenerationRequest],
    schemas: list[dict[str, Any]],
    concurrency: int,
    reset: bool,
) -> dict[str, Any]:
    if reset:
        await reset_prefix_cache(engine)

    async def call(index: int) -> tuple[int, Generation]:
        reply = await engine.generate(replace(requests[index], request_id=uuid.uuid4().hex))
        return index, reply

    load = await run_load(list(range(len(requests))), call, concurrency)
    replies = sorted(load.results)
    return {
        "groups": load.ok,
        "errors": load.errors[:3],
        "wall_s": round(load.wall_s, 3),
        "groups_per_s": round(load.per_second(), 4),
        "completion_tokens": sum(r.completion_tokens for _, r in replies),
        "prompt_tokens": sum(r.prompt_tokens for _, r in replies),
        "hit_length_limit": sum(1 for _, r in replies if r.finish_reason == "length"),
        "complete_parses": sum(1 for i, r in replies if _complete(r, schemas[i])),
        "sample_text": replies[0][1].text[:300] if replies else "",
    }


@dataclass
class Engines:
    """The engines side by side, and the service's own requests, recorded on the cached one."""

    cached: JudgeBackend
    uncached: JudgeBackend
    all_cores: JudgeBackend | None
    base: list[GenerationRequest]
    schemas: list[dict[str, Any]]


@contextlib.asynccontextmanager
async def setup(run: Run) -> AsyncIterator[Engines]:
    args = run.args
    groups = make_groups(
        args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME, fixed_order=True
    )
    with workdir(NAME) as tmp:
        # The group decoding: one request a group, whose reply the completeness check reads.
        settings = bench_settings(tmp, reason_max_chars=args.reason_chars, parse_retries=0, decoding="group")
        # Each engine's start reads the model's config with transformers in a thread of its own; two first
        # imports racing there fail ("cannot import name 'AutoConfig'"), so the import is done here first.
        from transformers import AutoConfig, AutoTokenizer  # noqa: F401

        started = time.perf_counter()
        cached, uncached = await asyncio.gather(
            start_engine(settings),
            start_engine(settings.model_copy(update={"enable_prefix_caching": False})),
        )
        log(f"both engines up in {time.perf_counter() - started:.1f} s")
        all_cores: JudgeBackend | None = None
        try:
            if args.cpu_binding:
                # vLLM's CPU worker binds its OpenMP threads to all cores but one, kept for the frontend;
                # this engine reserves none (read by the engine processes when they spawn).
                with env_override(VLLM_CPU_NUM_OF_RESERVED_CPU="0"):
                    all_cores = await start_engine(settings)
            recorder = RecordingBackend(cached)
            async with running_app(settings, recorder) as app:
                recorder.recording = True
                await asyncio.gather(
                    *(app.state.service.grade(JudgeRequest.model_validate(g)) for g in groups)
                )
                recorder.recording = False
            base = list(recorder.requests)
            schemas = [r.json_schema or {} for r in base]
            await _round(uncached, base, schemas, args.groups, reset=False)  # warm-up of engine B
            if all_cores is not None:
                await _round(all_cores, base, schemas, args.groups, reset=True)  # warm-up
            run.result["computed_max_tokens"] = base[0].max_tokens if base else None
            yield Engines(cached, uncached, all_cores, base, schemas)
        finally:
            await cached.close()
            await uncached.close()
            if all_cores is not None:
                await all_cores.close()


async def measure(run: Run, engine_name: str, _: None) -> dict[str, Any]:
    """The baseline requests on the engine with prefix caching (its cache emptied first) or without."""
    on = run.state
    engine = on.cached if engine_name == "cached" else on.uncached
    return await _round(engine, on.base, on.schemas, run.args.groups, reset=engine is not on.uncached)


async def output(run: Run, variant: str, _: None) -> dict[str, Any]:
    """A variant of the requests (schema dropped, bound loosened) on the cached engine."""
    on = run.state
    requests = _variant(on.base, variant, run.args.loose_max_tokens)
    return await _round(on.cached, requests, on.schemas, run.args.groups, reset=True)


async def cpu_binding(run: Run, name: str, _: None) -> dict[str, Any]:
    on = run.state
    engine = on.all_cores if name == "all_cores" else on.cached
    assert engine is not None
    return await _round(engine, on.base, on.schemas, run.args.groups, reset=True)


def _aggregate(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    groups = sum(r["groups"] for r in rounds)
    wall = sum(r["wall_s"] for r in rounds)
    return {
        "rounds": len(rounds),
        "groups_per_s": round(groups / wall, 4) if wall else float("nan"),
        "completion_tokens_per_group": round(sum(r["completion_tokens"] for r in rounds) / groups, 1),
        "prompt_tokens_per_group": round(sum(r["prompt_tokens"] for r in rounds) / groups, 1),
        "complete_share": round(sum(r["complete_parses"] for r in rounds) / groups, 3),
        "hit_length_limit_share": round(sum(r["hit_length_limit"] for r in rounds) / groups, 3),
        "sample_text": rounds[0]["sample_text"],
    }


LABELS = {
    "reserved_core": "CPU: vLLM default binding (one core kept for the frontend)",
    "all_cores": "CPU: OpenMP on all cores (VLLM_CPU_NUM_OF_RESERVED_CPU=0)",
    "cached": "prefix caching on (schema, bounded)",
    "uncached": "prefix caching off (schema, bounded)",
    "base": "schema + bound (service default)",
    "no_schema": "no schema, bound",
    "loose": "schema, max_tokens {loose}",
    "no_schema_loose": "no schema, max_tokens {loose}",
}


def columns(over: str) -> Any:
    def declared(run: Run) -> list[Column]:
        return [
            Column("variant", lambda cell: LABELS[cell.arm].format(loose=run.args.loose_max_tokens)),
            col("groups/s", "groups_per_s"),
            ratio_col("ratio", "groups_per_s", over=over),
            col("completion tokens/group", "completion_tokens_per_group"),
            col("complete parses", "complete_share"),
            col("hit max_tokens", "hit_length_limit_share"),
        ]

    return declared


def report(run: Run) -> None:
    args = run.args
    run.notes.append(
        "Ratios: prefix caching on vs off; all cores vs vLLM's default binding; the others vs schema + bound "
        f"(computed bound {run.result['computed_max_tokens']} tokens). N={args.answers}, {args.criteria} "
        f"criterion(s), reasons <= {args.reason_chars} chars, {args.groups} groups per round, all at once."
    )


EXPERIMENT = Experiment(
    options=[
        option("--groups", 8, "groups per round, all at once"),
        *shared(answers=2, criteria=1, reason_chars=16),
        option("--loose-max-tokens", 512),
        *shared(seed=41),
        option(
            "--cpu-binding",
            action="store_true",
            help="CPU only: a third engine with OpenMP on all cores (VLLM_CPU_NUM_OF_RESERVED_CPU=0), ABBA",
        ),
    ],
    key="prefix_caching",
    arms=("cached", "uncached"),
    order="palindrome",
    combine=_aggregate,
    columns=columns(over="uncached"),
    parts=[
        Sweep(
            key="output",
            arms=PALINDROME,
            order="palindrome",
            measure=output,
            combine=_aggregate,
            columns=columns(over="base"),
        ),
        Sweep(
            key="cpu_binding",
            arms=lambda run: ("reserved_core", "all_cores") if run.state.all_cores else (),
            order="palindrome",
            measure=cpu_binding,
            combine=_aggregate,
            columns=columns(over="reserved_core"),
        ),
    ],
)

EXPERIMENT.run_if_main(__name__)
