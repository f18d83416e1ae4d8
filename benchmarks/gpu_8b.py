"""An 8B judge on one NVIDIA GPU, with random weights: groups/s and tokens/s against the GPU's roofline.

    .venv/bin/python -m benchmarks gpu_8b              # on a GPU machine: a few minutes
    .venv/bin/python -m benchmarks gpu_8b --dry-run    # anywhere: build the model folder, print the plan
    .venv/bin/python -m benchmarks gpu_8b --cpu-smoke  # CPU: the whole path on a tiny random model

vLLM loads benchmarks/gpu_model/config.json (the Llama-3-8B shape) with load_format="dummy" (random
weights, nothing to download) and the embedded default model's tokenizer files, copied together into a
temporary folder. One engine serves two parts in one process:

1. group-wise vs point-wise (as benchmarks.groupwise_vs_pointwise): --gp-groups groups of N answers
   at once, through JudgeService.grade in-process;
2. concurrency (as benchmarks.concurrency): the real app on uvicorn in this process, httpx client,
   closed loop at each of --levels concurrent groups.

Groups use the service defaults (N=8 answers, four criteria, reasons <= 120 chars) unless told
otherwise; parse_retries is 0 (random weights fill every reason to its length limit, and a retry would
only repeat the same work).

Roofline (per run, from its measured prompt/completion tokens per engine call and the calls in
flight): prefill is compute-bound at 2 x params FLOPs per prompt token; a decode step reads every weight
once (2 bytes each in bf16) plus each sequence's KV cache, or, for large batches, is compute-bound at
2 x params per sequence. So a wave of S calls takes at least
S*p*2P/peak + c*max((W + S*(p + c/2)*kv)/BW, S*2P/peak) seconds (p, c: prompt and completion tokens per
call; P params; W weight bytes; kv KV bytes per token; BW HBM bandwidth). Attention FLOPs (under 10%
here) and prefix-cache hits (which skip prefill) are left out. Peaks come from a small table keyed by
the GPU's name (dense bf16, no sparsity), or from --peak-tflops / --hbm-tbps.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import BENCH_DIR
from benchmarks.engine import SharedBackend, bench_settings, reset_prefix_cache, running_app, start_engine
from benchmarks.experiment import Experiment, Outcome, option, shared
from benchmarks.groups import make_groups
from benchmarks.report import log, markdown_table, ratio
from benchmarks.servers import in_process_server, workdir

NAME = "gpu_8b"
CONFIG_PATH = BENCH_DIR / "gpu_model" / "config.json"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
)
# A config small enough for a CPU, with the same vocabulary: --cpu-smoke runs the full path on it.
SMOKE_SHAPE = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "max_position_embeddings": 4096,
}


@dataclass(frozen=True)
class GpuPeak:
    name: str
    bf16_tflops: float  # dense, no sparsity
    hbm_tbps: float


# Vendor datasheet numbers; the first entry whose key is in the device name wins (specific first).
GPU_PEAKS: list[tuple[str, GpuPeak]] = [
    ("H200", GpuPeak("H200 (SXM)", 989.0, 4.8)),
    ("H100 NVL", GpuPeak("H100 NVL", 835.0, 3.9)),
    ("H100 PCIe", GpuPeak("H100 PCIe", 756.0, 2.0)),
    ("H100", GpuPeak("H100 SXM", 989.0, 3.35)),
    ("A100-SXM4-80GB", GpuPeak("A100 SXM 80GB", 312.0, 2.039)),
    ("A100 80GB PCIe", GpuPeak("A100 PCIe 80GB", 312.0, 1.935)),
    ("A100", GpuPeak("A100 40GB", 312.0, 1.555)),
    ("L40S", GpuPeak("L40S", 362.0, 0.864)),
]


def lookup_peak(device_name: str | None, tflops: float | None, tbps: float | None) -> GpuPeak | None:
    """The table entry for this device, with any override applied; None when neither says anything."""
    found = next(
        (peak for key, peak in GPU_PEAKS if device_name and key.lower() in device_name.lower()), None
    )
    if tflops is None and tbps is None:
        return found
    if found is None and (tflops is None or tbps is None):
        raise SystemExit("unknown GPU: pass both --peak-tflops and --hbm-tbps")
    base = found or GpuPeak(device_name or "override", 0.0, 0.0)
    return GpuPeak(
        f"{base.name} (override)",
        tflops if tflops is not None else base.bf16_tflops,
        tbps if tbps is not None else base.hbm_tbps,
    )


def device_name() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return str(torch.cuda.get_device_name(0))


# --------------------------------------------------------------------------- model shape and roofline


def parameter_count(config: dict[str, Any]) -> dict[str, int]:
    """Parameters of a Llama-style decoder from its config (embedding, layers, head)."""
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or hidden // heads
    inter = config["intermediate_size"]
    vocab = config["vocab_size"]
    layers = config["num_hidden_layers"]
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2  # q, o + k, v
    mlp = 3 * hidden * inter
    per_layer = attention + mlp + 2 * hidden  # two RMSNorm weights
    embedding = vocab * hidden
    head = 0 if config.get("tie_word_embeddings") else vocab * hidden
    total = embedding + layers * per_layer + hidden + head
    return {
        "total": total,
        "embedding": embedding,
        "per_layer": per_layer,
        "lm_head": head,
        # Every parameter but the embedding lookup does 2 FLOPs per token (a tied head still multiplies).
        "matmul": total - embedding + (embedding if config.get("tie_word_embeddings") else 0),
        "kv_bytes_per_token_bf16": 2 * layers * kv_heads * head_dim * 2,
    }


def roofline_groups_per_s(
    *,
    calls_in_flight: float,
    calls_per_group: float,
    prompt_per_call: float,
    completion_per_call: float,
    matmul_params: int,
    weight_bytes: int,
    kv_bytes_per_token: int,
    peak: GpuPeak,
) -> dict[str, float]:
    """Upper bound on groups/s for waves of `calls_in_flight` calls (module docstring)."""
    flops_per_token = 2 * matmul_params
    peak_flops = peak.bf16_tflops * 1e12
    bandwidth = peak.hbm_tbps * 1e12
    prefill_s = calls_in_flight * prompt_per_call * flops_per_token / peak_flops
    # A decode step reads the weights once and every sequence's KV cache (mean context p + c/2).
    kv_bytes = calls_in_flight * (prompt_per_call + completion_per_call / 2) * kv_bytes_per_token
    step_s = max((weight_bytes + kv_bytes) / bandwidth, calls_in_flight * flops_per_token / peak_flops)
    decode_s = completion_per_call * step_s
    wave_s = prefill_s + decode_s
    return {
        "wave_s": wave_s,
        "prefill_s": prefill_s,
        "decode_s": decode_s,
        "decode_step_ms": step_s * 1000,
        "groups_per_s": calls_in_flight / calls_per_group / wave_s if wave_s else float("nan"),
    }


def versus_roofline(
    run: dict[str, Any], calls_in_flight: float, shape: dict[str, int], peak: GpuPeak | None
) -> dict[str, Any]:
    """Achieved FLOP/s and bandwidth of one measured run, and its share of the roofline bound."""
    calls = max(1, run["judge_calls"])
    tokens = run["prompt_tokens"] + run["completion_tokens"]
    wall = run["wall_s"]
    out: dict[str, Any] = {
        "tokens_per_s": round(tokens / wall, 1),
        "completion_tokens_per_s": round(run["completion_tokens"] / wall, 1),
        "prompt_tokens_per_s": round(run["prompt_tokens"] / wall, 1),
    }
    if peak is None:
        return out
    weight_bytes = 2 * shape["total"]
    bound = roofline_groups_per_s(
        calls_in_flight=min(calls_in_flight, calls),
        calls_per_group=calls / max(1, run["groups"]),
        prompt_per_call=run["prompt_tokens"] / calls,
        completion_per_call=run["completion_tokens"] / calls,
        matmul_params=shape["matmul"],
        weight_bytes=weight_bytes,
        kv_bytes_per_token=shape["kv_bytes_per_token_bf16"],
        peak=peak,
    )
    achieved_flops = 2 * shape["matmul"] * tokens / wall
    # Decode steps if the calls in flight advance together: completion tokens / calls in flight.
    steps = run["completion_tokens"] / max(1.0, min(calls_in_flight, calls))
    out.update(
        {
            "mfu": round(achieved_flops / (peak.bf16_tflops * 1e12), 4),
            "decode_weight_bandwidth_share": round(steps * weight_bytes / wall / (peak.hbm_tbps * 1e12), 4),
            "roofline_groups_per_s": round(bound["groups_per_s"], 3),
            "share_of_roofline": ratio(run["groups_per_s"], bound["groups_per_s"]),
            "roofline_decode_step_ms": round(bound["decode_step_ms"], 3),
        }
    )
    return out


# --------------------------------------------------------------------------- model folder and engine


def build_model_dir(target: Path, tokenizer_dir: Path, smoke: bool) -> dict[str, Any]:
    """Write config.json (the 8B shape, or the tiny smoke shape) and copy the tokenizer files in."""
    config = json.loads(CONFIG_PATH.read_text())
    if smoke:
        config.update(SMOKE_SHAPE)
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    copied = []
    for name in TOKENIZER_FILES:
        source = tokenizer_dir / name
        if source.is_file():
            shutil.copyfile(source, target / name)
            copied.append(name)
    if "tokenizer.json" not in copied and "vocab.json" not in copied:
        raise SystemExit(f"no tokenizer files in {tokenizer_dir}")
    return {"config": config, "tokenizer_files": copied}


def default_tokenizer_dir() -> Path:
    from judge_service.backends.default_model import prepared_model_dir
    from judge_service.config import Settings

    return prepared_model_dir(Settings().home_dir)


@contextlib.contextmanager
def dummy_weights() -> Iterator[None]:
    """Make the engine the service builds load random weights: while this is open, the engine arguments
    VLLMEngineBackend creates get load_format="dummy" (it imports AsyncEngineArgs when it builds)."""
    from vllm.engine import arg_utils

    original = arg_utils.AsyncEngineArgs

    def with_dummy_weights(**kwargs: Any) -> Any:
        return original(**{**kwargs, "load_format": "dummy"})

    arg_utils.AsyncEngineArgs = with_dummy_weights  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        arg_utils.AsyncEngineArgs = original  # type: ignore[misc]


def engine_load_format(backend: Any) -> str | None:
    engine = getattr(backend, "_engine", None)
    config = getattr(engine, "vllm_config", None)
    load = getattr(config, "load_config", None)
    value = getattr(load, "load_format", None)
    return None if value is None else str(value)


# --------------------------------------------------------------------------- the run


def plan(args: argparse.Namespace, shape: dict[str, int], peak: GpuPeak | None, device: str | None) -> dict:
    return {
        "mode": "cpu-smoke" if args.cpu_smoke else "gpu",
        "device": device,
        "peak": peak.__dict__ if peak else None,
        "params_total": shape["total"],
        "params_matmul": shape["matmul"],
        "weight_gib_bf16": round(2 * shape["total"] / 2**30, 2),
        "kv_kib_per_token_bf16": round(shape["kv_bytes_per_token_bf16"] / 1024, 1),
        "groupwise_vs_pointwise": {"groups": args.gp_groups, "answers": args.answers},
        "concurrency_levels": args.levels,
        "groups_per_level": {lvl: _groups_for(args, lvl) for lvl in args.levels},
        "answers": args.answers,
        "criteria": args.criteria,
        "reason_chars": args.reason_chars,
        "max_num_seqs": args.max_num_seqs,
        "enforce_eager": args.eager,
    }


def estimate_tokens(args: argparse.Namespace, tokenizer_dir: Path) -> dict[str, float] | None:
    """Prompt tokens of one rendered group (N answers, and one answer) with the real template and
    tokenizer, and the reply bound; None when it cannot be worked out (the preview is then skipped)."""
    try:
        from tokenizers import Tokenizer

        from judge_service.config import Settings
        from judge_service.judging.llm.criteria import resolve_criteria
        from judge_service.judging.llm.parser import max_output_tokens
        from judge_service.judging.llm.prompt import GroupContent, PromptRenderer
        from judge_service.schemas import JudgeRequest

        settings = Settings()
        renderer = PromptRenderer(settings.resolved_prompts_dir(), settings.prompt_template)
        tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        body = make_groups(1, args.answers, seed=5, n_criteria=args.criteria)[0]
        request = JudgeRequest.model_validate(body)
        criteria = resolve_criteria(request.criteria)

        def count(answers: list[Any]) -> int:
            prompt = renderer.render(
                GroupContent(
                    conversation=request.conversation,
                    reference=request.reference,
                    answers=answers,
                    criteria=criteria,
                    reason_max_chars=args.reason_chars,
                )
            )
            text = "".join(m["content"] for m in prompt.messages)
            return len(tokenizer.encode(text).ids) + 12  # + chat template markers

        return {
            "prompt_group": count(request.answers),
            "prompt_single": count(request.answers[:1]),
            "reply_bound_group": max_output_tokens(args.answers, len(criteria), args.reason_chars),
            "reply_bound_single": max_output_tokens(1, len(criteria), args.reason_chars),
        }
    except Exception as exc:  # a preview only: never stop the run for it
        log(f"token estimate skipped: {type(exc).__name__}: {exc}")
        return None


def preview(
    args: argparse.Namespace, shape: dict[str, int], peak: GpuPeak | None, tokens: dict[str, float] | None
) -> dict[str, Any] | None:
    """Roofline bounds for the planned runs, replies at their usual length bound (reasons filled to their
    character limit at ~3 characters per token; the service's max_tokens allows up to one per character,
    which random weights rarely reach, since the grammar stops each reason at its character limit)."""
    if peak is None or tokens is None:
        return None

    def bound(in_flight: float, per_group: float, p: float, c: float) -> float:
        return round(
            roofline_groups_per_s(
                calls_in_flight=in_flight,
                calls_per_group=per_group,
                prompt_per_call=p,
                completion_per_call=c,
                matmul_params=shape["matmul"],
                weight_bytes=2 * shape["total"],
                kv_bytes_per_token=shape["kv_bytes_per_token_bf16"],
                peak=peak,
            )["groups_per_s"],
            3,
        )

    group = (tokens["prompt_group"], tokens["reply_bound_group"])
    single = (tokens["prompt_single"], tokens["reply_bound_single"])
    return {
        "tokens": tokens,
        "groupwise_groups_per_s_bound": bound(args.gp_groups, 1, *group),
        "pointwise_groups_per_s_bound": bound(args.gp_groups * args.answers, args.answers, *single),
        "service_groups_per_s_bound_by_level": {lvl: bound(lvl, 1, *group) for lvl in args.levels},
    }


def _groups_for(args: argparse.Namespace, level: int) -> int:
    return min(args.max_groups_per_level, max(args.min_groups, level * args.waves))


async def run(args: argparse.Namespace, model_dir: Path, shape: dict[str, int], peak: GpuPeak | None) -> dict:
    import httpx

    from benchmarks.concurrency import run_single, summarize_level
    from benchmarks.groupwise_vs_pointwise import mode_round

    result: dict[str, Any] = {}
    with workdir(NAME) as tmp:
        settings = bench_settings(
            tmp,
            model=str(model_dir),
            served_model_name="dummy-llama3-8b" if not args.cpu_smoke else "dummy-smoke",
            reason_max_chars=args.reason_chars,
            parse_retries=0,
            max_num_seqs=args.max_num_seqs,
            max_groups_in_flight=args.max_num_seqs,
            max_groups_queued=4096,
            enforce_eager=True if args.eager else None,
            max_model_len=args.max_model_len,
        )
        with dummy_weights():
            engine = await start_engine(settings)
        result["load_format"] = engine_load_format(engine)
        if result["load_format"] not in (None, "dummy", "LoadFormats.DUMMY"):
            raise RuntimeError(f"the engine loaded with load_format={result['load_format']!r}, not dummy")
        try:
            async with running_app(settings, SharedBackend(engine)) as app:
                service = app.state.service
                log("warm-up")
                warm = make_groups(2, args.answers, seed=1, n_criteria=args.criteria, run_id=NAME)
                await mode_round(service, warm, "groupwise")

                gp_groups = make_groups(
                    args.gp_groups,
                    args.answers,
                    seed=2,
                    n_criteria=args.criteria,
                    run_id=NAME,
                    fixed_order=True,
                )
                gp = []
                for mode in ("groupwise", "pointwise"):
                    await reset_prefix_cache(engine)
                    entry = await mode_round(service, gp_groups, mode)
                    in_flight = args.gp_groups * (1 if mode == "groupwise" else args.answers)
                    entry["roofline"] = versus_roofline(entry, in_flight, shape, peak)
                    gp.append(entry)
                    log(f"{mode}: {entry['groups_per_s']} groups/s, {entry['roofline']}")
                result["groupwise_vs_pointwise"] = gp

                levels = []
                async with (
                    in_process_server(app) as base_url,
                    httpx.AsyncClient(
                        base_url=base_url,
                        timeout=1800,
                        limits=httpx.Limits(max_connections=max(args.levels) * 2),
                    ) as client,
                ):
                    for index, level in enumerate(args.levels):
                        groups = make_groups(
                            _groups_for(args, level),
                            args.answers,
                            seed=100 + index,
                            n_criteria=args.criteria,
                            run_id=NAME,
                        )
                        load, judgements = await run_single(client, groups, level)
                        entry = summarize_level("POST /v1/judge", level, load, judgements)
                        totals = {
                            "groups": len(judgements),
                            "groups_per_s": entry["groups_per_s"] or 0.0,
                            "wall_s": load.wall_s,
                            "judge_calls": sum(j["usage"]["judge_calls"] for j in judgements),
                            "prompt_tokens": sum(j["usage"]["prompt_tokens"] for j in judgements),
                            "completion_tokens": sum(j["usage"]["completion_tokens"] for j in judgements),
                        }
                        entry["roofline"] = versus_roofline(totals, level, shape, peak)
                        levels.append(entry)
                        log(f"level {level}: {entry['groups_per_s']} groups/s, {entry['roofline']}")
                result["concurrency"] = levels
        finally:
            await engine.close()
    return result


def _table(result: dict[str, Any]) -> str:
    def cells(r: dict[str, Any]) -> list[Any]:
        roof = r["roofline"]
        return [
            r["groups_per_s"],
            roof["tokens_per_s"],
            roof["completion_tokens_per_s"],
            roof.get("roofline_groups_per_s", "n/a"),
            roof.get("share_of_roofline", "n/a"),
            roof.get("mfu", "n/a"),
            roof.get("decode_weight_bandwidth_share", "n/a"),
        ]

    headers = ["groups/s", "tokens/s", "generated tokens/s", "roofline groups/s", "share", "MFU", "decode BW"]
    rows = [[r["mode"], r["groups"], *cells(r)] for r in result["groupwise_vs_pointwise"]]
    rows += [[f"service, {r['level']} concurrent", r["groups"], *cells(r)] for r in result["concurrency"]]
    table = markdown_table(["run", "groups", *headers], rows)
    gp = {r["mode"]: r for r in result["groupwise_vs_pointwise"]}
    if len(gp) == 2:
        table += (
            f"\n\ngroup-wise / point-wise groups/s: "
            f"{ratio(gp['groupwise']['groups_per_s'], gp['pointwise']['groups_per_s'])}; "
            f"prompt tokens: {ratio(gp['groupwise']['prompt_tokens'], gp['pointwise']['prompt_tokens'])}"
        )
    latencies = {r["level"]: r["latency"]["p50_ms"] for r in result["concurrency"]}
    table += f"\n\np50 group latency (ms) by concurrency: {latencies}"
    return table


def plan_and_run(args: argparse.Namespace) -> Outcome | int:
    if args.cpu_smoke:
        args.levels, args.waves, args.min_groups, args.gp_groups = [1, 4], 1, 2, 2
        args.answers, args.criteria, args.reason_chars = 2, 1, 16
        args.max_num_seqs, args.max_model_len = 16, 2048

    device = args.gpu or device_name()
    peak = lookup_peak(device, args.peak_tflops, args.hbm_tbps)
    config = json.loads(CONFIG_PATH.read_text())
    shape = parameter_count({**config, **(SMOKE_SHAPE if args.cpu_smoke else {})})
    if not args.cpu_smoke and not args.dry_run and device_name() is None:
        raise SystemExit("no CUDA device: use --dry-run or --cpu-smoke here")
    tokenizer_dir = args.tokenizer_dir or default_tokenizer_dir()
    the_plan = plan(args, shape, peak, device)
    the_plan["roofline_preview"] = preview(args, shape, peak, estimate_tokens(args, tokenizer_dir))
    sys.stdout.write(json.dumps(the_plan, indent=2) + "\n")
    sys.stdout.flush()

    with tempfile.TemporaryDirectory(prefix="gpu-8b-model-") as folder:
        model_dir = Path(folder)
        built = build_model_dir(model_dir, tokenizer_dir, args.cpu_smoke)
        log(f"model folder {model_dir}: config + {', '.join(built['tokenizer_files'])}")
        if args.dry_run:
            sys.stdout.write("dry run: the model folder builds; nothing loaded\n")
            return 0
        measured = asyncio.run(run(args, model_dir, shape, peak))
    name = NAME if not args.cpu_smoke else f"{NAME}_cpu_smoke"
    return Outcome({"plan": the_plan, **measured}, _table(measured), name=name)


EXPERIMENT = Experiment(
    options=[
        option("--dry-run", action="store_true", help="build the model folder, print the plan, exit"),
        option("--cpu-smoke", action="store_true", help="a tiny random model on CPU, tiny groups"),
        option("--gpu", help="GPU name for the peak table (default: torch's device name)"),
        option("--peak-tflops", type=float, help="override: dense bf16 TFLOP/s"),
        option("--hbm-tbps", type=float, help="override: memory bandwidth, TB/s"),
        option("--tokenizer-dir", type=Path, help="default: the prepared embedded model"),
        *shared(levels="1,4,16,64,256"),
        option("--waves", 2),
        option("--min-groups", 3),
        option("--max-groups-per-level", 256),
        option("--gp-groups", 32, "groups at once, group- vs point-wise"),
        *shared(answers=8, criteria=4, reason_chars=120),
        option("--max-num-seqs", 256),
        option("--max-model-len", 8192),
        option("--eager", action="store_true", help="no CUDA graphs/compilation (faster start)"),
    ],
    run=plan_and_run,
)

EXPERIMENT.run_if_main(__name__)
