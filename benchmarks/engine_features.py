"""Which vLLM features matter for this workload: prefix caching, structured outputs, bounded output length.

    OMP_NUM_THREADS=2 .venv/bin/python -m benchmarks.engine_features [--groups 8] [--loose-max-tokens 512]

Two engines are loaded side by side in this process, identical except for automatic prefix caching
(A: on, the service default; B: off). The judge requests are the service's own: the groups go once
through JudgeService.grade on engine A (warm-up and recording), and the recorded GenerationRequests are
then replayed straight into the engines, --groups at a time:

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

import argparse
import asyncio
import sys
import time
import uuid
from dataclasses import replace
from typing import Any

from benchmarks.engine import RecordingBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.groups import make_groups
from benchmarks.load import run_load
from benchmarks.report import log, markdown_table, ratio, write_result
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


async def _main(args: argparse.Namespace) -> int:
    groups = make_groups(
        args.groups, args.answers, seed=args.seed, n_criteria=args.criteria, run_id=NAME, fixed_order=True
    )
    rounds: list[dict[str, Any]] = []
    with workdir(NAME) as tmp:
        settings = bench_settings(tmp, reason_max_chars=args.reason_chars, parse_retries=0)
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

            plan: list[tuple[str, str, JudgeBackend]] = []
            for engine_name in ("cached", "uncached", "uncached", "cached"):
                plan.append(("prefix_caching", engine_name, cached if engine_name == "cached" else uncached))
            for variant in [*PALINDROME, *reversed(PALINDROME)]:
                plan.append(("output", variant, cached))
            if all_cores is not None:
                await _round(all_cores, base, schemas, args.groups, reset=True)  # warm-up
                for name in ("reserved_core", "all_cores", "all_cores", "reserved_core"):
                    plan.append(("cpu_binding", name, all_cores if name == "all_cores" else cached))
            for block, label, engine in plan:
                requests = base if block != "output" else _variant(base, label, args.loose_max_tokens)
                measured = await _round(engine, requests, schemas, args.groups, reset=engine is not uncached)
                entry = {"block": block, "variant": label, **measured}
                rounds.append(entry)
                log(
                    f"{block}/{label}: {entry['groups_per_s']} groups/s, completion tokens "
                    f"{entry['completion_tokens']}, complete {entry['complete_parses']}/{entry['groups']}, "
                    f"hit limit {entry['hit_length_limit']}"
                )
        finally:
            await cached.close()
            await uncached.close()
            if all_cores is not None:
                await all_cores.close()
    return _report(args, rounds, base[0].max_tokens if base else None)


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


def _report(args: argparse.Namespace, rounds: list[dict[str, Any]], bound: int | None) -> int:
    def pick(block: str, variant: str) -> list[dict[str, Any]]:
        return [r for r in rounds if r["block"] == block and r["variant"] == variant]

    prefix = {v: _aggregate(pick("prefix_caching", v)) for v in ("cached", "uncached")}
    output = {v: _aggregate(pick("output", v)) for v in PALINDROME}
    binding = (
        {v: _aggregate(pick("cpu_binding", v)) for v in ("reserved_core", "all_cores")}
        if pick("cpu_binding", "all_cores")
        else {}
    )
    ratios = {
        "prefix_caching_on_over_off": ratio(
            prefix["cached"]["groups_per_s"], prefix["uncached"]["groups_per_s"]
        ),
        **{
            f"{v}_over_base": ratio(output[v]["groups_per_s"], output["base"]["groups_per_s"])
            for v in PALINDROME[1:]
        },
    }
    if binding:
        ratios["all_cores_over_reserved_core"] = ratio(
            binding["all_cores"]["groups_per_s"], binding["reserved_core"]["groups_per_s"]
        )
    labels = {
        "reserved_core": "CPU: vLLM default binding (one core kept for the frontend)",
        "all_cores": "CPU: OpenMP on all cores (VLLM_CPU_NUM_OF_RESERVED_CPU=0)",
        "cached": "prefix caching on (schema, bounded)",
        "uncached": "prefix caching off (schema, bounded)",
        "base": "schema + bound (service default)",
        "no_schema": "no schema, bound",
        "loose": f"schema, max_tokens {args.loose_max_tokens}",
        "no_schema_loose": f"no schema, max_tokens {args.loose_max_tokens}",
    }
    rows = []
    special = {
        "cached": ratios["prefix_caching_on_over_off"],
        "all_cores": ratios.get("all_cores_over_reserved_core", float("nan")),
    }
    for key, agg in [*prefix.items(), *output.items(), *binding.items()]:
        if key in special:
            versus = special[key]
        elif key in ("uncached", "base", "reserved_core"):
            versus = 1.0
        else:
            versus = ratios[f"{key}_over_base"]
        rows.append(
            [
                labels[key],
                agg["groups_per_s"],
                versus,
                agg["completion_tokens_per_group"],
                agg["complete_share"],
                agg["hit_length_limit_share"],
            ]
        )
    table = markdown_table(
        ["variant", "groups/s", "ratio", "completion tokens/group", "complete parses", "hit max_tokens"], rows
    )
    table += (
        f"\n\nRatios: prefix caching on vs off; all cores vs vLLM's default binding; the others vs schema + "
        f"bound (computed bound {bound} tokens). N={args.answers}, {args.criteria} criterion(s), "
        f"reasons <= {args.reason_chars} chars, {args.groups} groups per round, all at once."
    )
    result = {
        "config": vars(args),
        "computed_max_tokens": bound,
        "prefix_caching": prefix,
        "output": output,
        "cpu_binding": binding,
        "ratios": ratios,
        "rounds": rounds,
    }
    write_result(NAME, result, table)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=8, help="groups per round, all at once")
    parser.add_argument("--answers", type=int, default=2)
    parser.add_argument("--criteria", type=int, default=1)
    parser.add_argument("--reason-chars", type=int, default=16)
    parser.add_argument("--loose-max-tokens", type=int, default=512)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument(
        "--cpu-binding",
        action="store_true",
        help="CPU only: a third engine with OpenMP on all cores (VLLM_CPU_NUM_OF_RESERVED_CPU=0), ABBA",
    )
    args = parser.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
