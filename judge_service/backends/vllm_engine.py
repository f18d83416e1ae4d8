"""The in-process vLLM engine (AsyncLLM). vLLM is imported lazily: the rest of the service runs without it.

Every concurrent generate() becomes one request in vLLM's continuous batch, so feeding many groups at
once is what fills the engine. The prompt is chat-templated and tokenized here, which gives an exact
prompt token count before anything is sent (used for the context-window check).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge_service.backends.base import BackendHealth, Generation, GenerationRequest, TokenLogprobs
from judge_service.backends.engine_stats import stat_logger_factory
from judge_service.errors import JudgeBackendError, NotReadyError
from judge_service.metrics import JudgeMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineOptions:
    model: str | None  # None: the embedded default, prepared on first start
    served_model_name: str
    home_dir: Path = Path(".")
    dtype: str = "auto"
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_gib: float | None = None
    enforce_eager: bool | None = None
    enable_prefix_caching: bool = True
    max_num_seqs: int = 64
    seed: int = 0


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def _kv_cache_bytes(gib: float | None, cpu: bool) -> int | None:
    if gib is None:
        return 2 * 1024**3 if cpu else None
    return int(gib * 1024**3)


class TokenizedPrompts:
    """Token ids of prompts counted before admission, kept for the generate() that follows.

    LLMJudge.prepare counts a prompt's tokens (the context check) and generate() later receives the
    same messages list; keeping the ids in between tokenizes each prompt once, not twice (tokenizing is
    event-loop CPU that grows with the prompt). Keyed by the list itself, which is held so that its id cannot
    be reused, and taken on first use. Prompts never generated (a 429, an error) are dropped oldest
    first past `max_prompts` or `max_tokens` in all, so refused giant groups cannot pile up in memory.
    Ids are kept as 4-byte arrays: a list of Python ints takes ~9x the prompt's text.
    """

    def __init__(self, max_prompts: int = 1024, max_tokens: int = 2_000_000) -> None:
        self._max_prompts = max_prompts
        self._max_tokens = max_tokens
        self._tokens = 0
        self._kept: OrderedDict[int, tuple[list[dict[str, str]], array[int]]] = OrderedDict()

    def keep(self, messages: list[dict[str, str]], ids: list[int]) -> None:
        self._drop(id(messages))
        self._kept[id(messages)] = (messages, array("i", ids))
        self._tokens += len(ids)
        while self._kept and (len(self._kept) > self._max_prompts or self._tokens > self._max_tokens):
            self._drop(next(iter(self._kept)))

    def take(self, messages: list[dict[str, str]]) -> list[int] | None:
        kept = self._kept.get(id(messages))
        if kept is None or kept[0] is not messages:
            return None
        self._drop(id(messages))
        return kept[1].tolist()

    def _drop(self, key: int) -> None:
        dropped = self._kept.pop(key, None)
        if dropped is not None:
            self._tokens -= len(dropped[1])

    def __len__(self) -> int:
        return len(self._kept)


class VLLMEngineBackend:
    def __init__(self, options: EngineOptions, metrics: JudgeMetrics | None = None) -> None:
        self._options = options
        self._metrics = metrics
        self._engine: Any = None
        self._tokenizer: Any = None
        self._max_context: int | None = None
        self._counted = TokenizedPrompts()

    @property
    def model_name(self) -> str:
        return self._options.served_model_name

    @property
    def max_context_tokens(self) -> int | None:
        return self._max_context

    async def check_health(self) -> BackendHealth:
        # vLLM marks the engine dead when its EngineCore process exits (a monitor thread); it does not
        # come back, as with vLLM's own server, which exits so that a supervisor restarts it.
        if self._engine is None:
            return BackendHealth(ok=False, error="the vLLM engine is not running")
        try:
            await self._engine.check_health()
        except Exception as exc:  # EngineDeadError
            return BackendHealth(
                ok=False, fatal=True, error=f"the vLLM engine died: {type(exc).__name__}: {exc}"
            )
        return BackendHealth(ok=True)

    async def start(self) -> None:
        # Both steps block for tens of seconds; threads keep /healthz answering meanwhile.
        model = self._options.model
        if model is None:
            from judge_service.backends.default_model import prepared_model_dir

            model = str(await asyncio.to_thread(prepared_model_dir, self._options.home_dir))
        self._engine = await asyncio.to_thread(self._build_engine, model)
        self._tokenizer = self._engine.get_tokenizer()
        self._max_context = int(self._engine.model_config.max_model_len)
        log.info("vLLM engine ready: %s (context %d tokens)", self.model_name, self._max_context)

    def _build_engine(self, model: str) -> Any:
        from vllm.config import StructuredOutputsConfig
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        opts = self._options
        cpu = _on_cpu()
        args = AsyncEngineArgs(
            model=model,
            served_model_name=opts.served_model_name,
            # float32 + eager measured fastest on small CPUs; GPUs want bf16 and CUDA graphs.
            dtype=("float32" if cpu else "bfloat16") if opts.dtype == "auto" else opts.dtype,  # type: ignore[arg-type]
            max_model_len=opts.max_model_len,  # type: ignore[arg-type]  # None: the model's own
            # On CPU the memory fraction reserves that share of *all* RAM and is refused when other
            # processes hold memory; an explicit KV cache size is both smaller and predictable.
            gpu_memory_utilization=opts.gpu_memory_utilization or (0.5 if cpu else 0.9),
            kv_cache_memory_bytes=_kv_cache_bytes(opts.kv_cache_gib, cpu),
            enforce_eager=cpu if opts.enforce_eager is None else opts.enforce_eager,
            enable_prefix_caching=opts.enable_prefix_caching,
            max_num_seqs=opts.max_num_seqs,
            seed=opts.seed,
            disable_log_stats=True,
            # Whitespace between JSON tokens is pure cost: it can be a third of a small model's reply.
            structured_outputs_config=StructuredOutputsConfig(
                backend="xgrammar", disable_any_whitespace=True
            ),
        )
        loggers = [stat_logger_factory(self._metrics)] if self._metrics is not None else None
        return AsyncLLM.from_engine_args(args, stat_loggers=loggers)

    def _prompt_token_ids(self, messages: list[dict[str, str]]) -> list[int]:
        ids = self._tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        # transformers 5 returns a BatchEncoding-like mapping; older versions a plain list.
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)

    async def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        if self._tokenizer is None:
            raise NotReadyError("the judge engine is not loaded yet")
        ids = self._prompt_token_ids(messages)
        self._counted.keep(messages, ids)
        return len(ids)

    async def generate(self, request: GenerationRequest) -> Generation:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        if self._engine is None:
            raise NotReadyError("the judge engine is not loaded yet")
        structured = (
            StructuredOutputsParams(json=request.json_schema) if request.json_schema is not None else None
        )
        params = SamplingParams(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            structured_outputs=structured,
            # Raw log-probabilities (vLLM's default logprobs_mode): the model's own belief at each mark,
            # before the grammar masks tokens.
            logprobs=request.top_logprobs or None,
        )
        prompt_ids = self._counted.take(request.messages) or self._prompt_token_ids(request.messages)
        request_id = request.request_id or uuid.uuid4().hex
        final = None
        try:
            async for output in self._engine.generate(
                {"prompt_token_ids": prompt_ids}, params, request_id=request_id
            ):
                final = output
        except Exception as exc:  # vLLM raises its own types (EngineDeadError, ValueError, ...)
            raise JudgeBackendError(f"the vLLM engine failed: {type(exc).__name__}: {exc}") from exc
        if final is None or not final.outputs:
            raise JudgeBackendError("the vLLM engine returned no output")
        completion = final.outputs[0]
        return Generation(
            text=completion.text,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(completion.token_ids),
            finish_reason=completion.finish_reason,
            logprobs=_token_logprobs(completion) if request.top_logprobs else None,
        )

    async def close(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None


def _token_logprobs(completion: Any) -> tuple[TokenLogprobs, ...] | None:
    """vLLM's per-token {token id: Logprob} (the sampled token included) as TokenLogprobs."""
    positions = completion.logprobs
    if not positions or len(positions) != len(completion.token_ids):
        return None
    tokens = []
    for token_id, alternatives in zip(completion.token_ids, positions, strict=True):
        chosen = alternatives.get(token_id)
        if chosen is None or chosen.decoded_token is None:
            return None
        ranked = sorted(alternatives.values(), key=lambda lp: -lp.logprob)
        top = tuple((lp.decoded_token, lp.logprob) for lp in ranked if lp.decoded_token is not None)
        tokens.append(TokenLogprobs(chosen.decoded_token, chosen.logprob, top))
    return tuple(tokens)
