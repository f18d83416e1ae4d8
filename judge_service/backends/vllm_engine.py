"""The in-process vLLM engine (AsyncLLM). vLLM is imported lazily: the rest of the service runs without it.

Every concurrent generate() becomes one request in vLLM's continuous batch, so feeding many groups at
once is what fills the engine. The prompt is chat-templated and tokenized here, which gives an exact
prompt token count before anything is sent (used for the context-window check).

Thinking judges (backends/thinking_profile.py): the profile comes from the settings and the model's own
files (chat template, model type), read before the engine is built so that a parser the family needs is
given to the engine. Thinking off is made explicit to the engine (`reasoning_ended`), so the JSON grammar
binds from the first token; on, the grammar binds after the end marker, a budget goes in as vLLM's
`thinking_token_budget`, and the reply is split at the end marker's token ids: the JSON, its text and
its log-probabilities are the tokens after it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from judge_service.backends.base import (
    THINKING_OFF,
    BackendHealth,
    Generation,
    GenerationRequest,
    ThinkingCall,
    TokenLogprobs,
)
from judge_service.backends.engine_stats import stat_logger_factory
from judge_service.backends.reasoning_split import split_text, split_tokens, with_parts
from judge_service.backends.thinking_profile import (
    THINK_END,
    ProfileSettings,
    ThinkingProfile,
    profile_for_model,
)
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
    thinking: ProfileSettings = field(default_factory=ProfileSettings)
    chat_template: Path | None = None  # replaces the model's own
    sleep_mode: bool = False  # vLLM's enable_sleep_mode: the engine can sleep (backends/lifecycle.py)


def why_no_sleep_mode() -> str | None:
    """Why this machine's vLLM has no sleep mode, or None when it has one."""
    from vllm.platforms import current_platform

    if current_platform.is_sleep_mode_available():
        return None
    return (
        f"vLLM's {type(current_platform).__name__} has no sleep mode (is_sleep_mode_available() is "
        "False; vLLM's CPU build never has one)"
    )


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def _device_free_bytes() -> int | None:
    import torch

    if not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info()
    return int(free)


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
        self._kept: OrderedDict[int, tuple[list[dict[str, str]], bool, array[int]]] = OrderedDict()

    def keep(self, messages: list[dict[str, str]], ids: list[int], *, variant: bool = False) -> None:
        """`variant`: the template's thinking switch the ids were made with (take() must ask for it)."""
        self._drop(id(messages))
        self._kept[id(messages)] = (messages, variant, array("i", ids))
        self._tokens += len(ids)
        while self._kept and (len(self._kept) > self._max_prompts or self._tokens > self._max_tokens):
            self._drop(next(iter(self._kept)))

    def take(self, messages: list[dict[str, str]], *, variant: bool = False) -> list[int] | None:
        kept = self._kept.get(id(messages))
        if kept is None or kept[0] is not messages or kept[1] != variant:
            return None
        self._drop(id(messages))
        return kept[2].tolist()

    def _drop(self, key: int) -> None:
        dropped = self._kept.pop(key, None)
        if dropped is not None:
            self._tokens -= len(dropped[2])

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
        self._profile: ThinkingProfile | None = None
        self._chat_template: str | None = None
        self._end_ids: list[int] = []  # the thinking's end marker, as token ids
        self._start_ids: list[int] = []
        self._tells_reasoning_ended = False  # AsyncLLM.generate takes reasoning_ended
        self._asleep = False

    @property
    def model_name(self) -> str:
        return self._options.served_model_name

    @property
    def max_context_tokens(self) -> int | None:
        return self._max_context

    @property
    def thinking_profile(self) -> ThinkingProfile | None:
        return self._profile

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

    @property
    def asleep(self) -> bool:
        return self._asleep

    def why_no_sleep(self) -> str | None:
        platform = why_no_sleep_mode()
        if platform is not None:
            return platform
        if not self._options.sleep_mode:
            return "the engine was started without sleep mode: start the service with JUDGE_SLEEP_MODE=1"
        if self._engine is None:
            return "the vLLM engine is not running"
        return None

    async def sleep(self, level: int) -> int | None:
        """vLLM's sleep at `level` (1: weights offloaded to CPU memory, KV cache dropped; 2: both
        dropped), the prefix cache emptied first; the device memory freed, from CUDA's own count."""
        before = _device_free_bytes()
        await self._engine.reset_prefix_cache()
        await self._engine.sleep(level)
        self._asleep = True
        after = _device_free_bytes()
        return None if before is None or after is None else after - before

    async def wake(self) -> None:
        await self._engine.wake_up()
        self._asleep = False
        await self._engine.reset_prefix_cache()  # nothing cached before the sleep is trusted after it

    async def start(self) -> None:
        # Both steps block for tens of seconds; threads keep /healthz answering meanwhile.
        model = self._options.model
        if model is None:
            from judge_service.backends.default_model import prepared_model_dir

            model = str(await asyncio.to_thread(prepared_model_dir, self._options.home_dir))
        if self._options.chat_template is not None:
            self._chat_template = self._options.chat_template.read_text()
        profile = await asyncio.to_thread(self._detect_profile, model)
        self._engine = await asyncio.to_thread(self._build_engine, model, profile)
        self._tokenizer = self._engine.get_tokenizer()
        self._max_context = int(self._engine.model_config.max_model_len)
        self._profile = self._with_markers(profile)
        log.info(
            "vLLM engine ready: %s (context %d tokens; thinking %s, from %s)",
            self.model_name,
            self._max_context,
            self._profile.switch,
            self._profile.source,
        )

    def _detect_profile(self, model: str) -> ThinkingProfile:
        """The thinking profile: the settings over what the model's chat template and type say."""
        from transformers import AutoConfig, AutoTokenizer

        template = self._chat_template
        if template is None:
            template = getattr(AutoTokenizer.from_pretrained(model), "chat_template", None)
        model_type = getattr(AutoConfig.from_pretrained(model), "model_type", None)
        detected = profile_for_model(
            self._options.model or "", chat_template=template or "", model_type=model_type
        )
        profile = self._options.thinking.apply(detected)
        if profile.gpt_oss:
            raise RuntimeError(
                "gpt-oss judges are served over HTTP: vLLM applies the harmony format's grammar only in its "
                "server. Start `vllm serve` with the model and set JUDGE_BACKEND=openai (docs/thinking.md)"
            )
        return profile

    def _with_markers(self, profile: ThinkingProfile) -> ThinkingProfile:
        """The profile with the marker strings and budget support of the engine as built."""
        self._tells_reasoning_ended = "reasoning_ended" in inspect.signature(self._engine.generate).parameters
        config = getattr(self._engine.vllm_config, "reasoning_config", None)
        if not profile.thinks or config is None or not config.enabled:
            return profile
        self._end_ids = list(config.natural_reasoning_end_token_ids or config.reasoning_end_token_ids or [])
        self._start_ids = list(config.reasoning_start_token_ids or [])
        return replace(
            profile,
            start_marker=self._tokenizer.decode(self._start_ids),
            end_marker=self._tokenizer.decode(self._end_ids),
            enforces_budget=bool(self._end_ids),
        )

    def _build_engine(self, model: str, profile: ThinkingProfile) -> Any:
        from vllm.config import StructuredOutputsConfig
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        opts = self._options
        cpu = _on_cpu()
        reasoning: dict[str, Any] = {}
        if profile.thinks and profile.parser:
            if profile.parser_plugin:
                from vllm.reasoning import ReasoningParserManager

                # Registered in this process too: the engine's reasoning config resolves the parser here.
                ReasoningParserManager.import_reasoning_parser(profile.parser_plugin)
                reasoning["reasoning_parser_plugin"] = profile.parser_plugin
            reasoning["reasoning_parser"] = profile.parser
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
            enable_sleep_mode=opts.sleep_mode and why_no_sleep_mode() is None,
            disable_log_stats=True,
            # Whitespace between JSON tokens is pure cost: it can be a third of a small model's reply.
            structured_outputs_config=StructuredOutputsConfig(
                backend="xgrammar", disable_any_whitespace=True
            ),
            **reasoning,
        )
        loggers = [stat_logger_factory(self._metrics)] if self._metrics is not None else None
        return AsyncLLM.from_engine_args(args, stat_loggers=loggers)

    def _template_kwargs(self, thinking: ThinkingCall) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self._chat_template is not None:
            kwargs["chat_template"] = self._chat_template
        profile = self._profile
        if profile is not None and profile.switch == "toggle":
            kwargs[profile.template_kwarg] = thinking.enabled
        return kwargs

    def _prompt_token_ids(self, messages: list[dict[str, str]], thinking: ThinkingCall) -> list[int]:
        ids = self._tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True, **self._template_kwargs(thinking)
        )
        # transformers 5 returns a BatchEncoding-like mapping; older versions a plain list.
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)

    async def count_prompt_tokens(
        self, messages: list[dict[str, str]], thinking: ThinkingCall = THINKING_OFF
    ) -> int | None:
        if self._tokenizer is None:
            raise NotReadyError("the judge engine is not loaded yet")
        ids = self._prompt_token_ids(messages, thinking)
        self._counted.keep(messages, ids, variant=thinking.enabled)
        return len(ids)

    async def generate(self, request: GenerationRequest) -> Generation:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        if self._engine is None:
            raise NotReadyError("the judge engine is not loaded yet")
        structured = (
            StructuredOutputsParams(json=request.json_schema) if request.json_schema is not None else None
        )
        thinking = self._thinking_of(request.thinking)
        budget = thinking.budget if thinking.enabled else None
        params = SamplingParams(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            structured_outputs=structured,
            # Raw log-probabilities (vLLM's default logprobs_mode): the model's own belief at each mark,
            # before the grammar masks tokens.
            logprobs=request.top_logprobs or None,
            thinking_token_budget=budget,
            min_tokens=min(thinking.min_tokens, budget or thinking.min_tokens) if thinking.enabled else 0,
        )
        prompt_ids = self._counted.take(request.messages, variant=request.thinking.enabled)
        if prompt_ids is None:
            prompt_ids = self._prompt_token_ids(request.messages, request.thinking)
        request_id = request.request_id or uuid.uuid4().hex
        extra: dict[str, Any] = {}
        if self._profile is not None and self._profile.thinks and self._tells_reasoning_ended:
            # Said, not guessed from the prompt: off binds the grammar from the first token; on keeps a
            # caller's text from looking like the end of the thinking.
            extra["reasoning_ended"] = not thinking.enabled
        final = None
        try:
            async for output in self._engine.generate(
                {"prompt_token_ids": prompt_ids}, params, request_id=request_id, **extra
            ):
                final = output
        except Exception as exc:  # vLLM raises its own types (EngineDeadError, ValueError, ...)
            raise JudgeBackendError(f"the vLLM engine failed: {type(exc).__name__}: {exc}") from exc
        if final is None or not final.outputs:
            raise JudgeBackendError("the vLLM engine returned no output")
        completion = final.outputs[0]
        logprobs = _token_logprobs(completion) if request.top_logprobs else None
        reply = Generation(
            text=completion.text,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(completion.token_ids),
            finish_reason=completion.finish_reason,
            logprobs=logprobs,
        )
        if not thinking.enabled:
            return reply
        if not self._end_ids:  # the engine could not tokenize the parser's markers: split the text
            parts = split_text(
                reply.text,
                logprobs,
                start_marker=self._profile.start_marker if self._profile else None,
                end_marker=(self._profile.end_marker if self._profile else None) or THINK_END,
                opened=False,
            )
            return with_parts(reply, parts)
        return self._split(reply, list(completion.token_ids))

    def _thinking_of(self, asked: ThinkingCall) -> ThinkingCall:
        """A model that always thinks thinks even when a call asks it not to (the judge refuses such
        requests; other callers, such as RFT model graders, get the model's way)."""
        profile = self._profile
        if profile is None or not profile.thinks:
            return THINKING_OFF
        if profile.switch == "always" and not asked.enabled:
            return replace(asked, enabled=True)
        return asked

    def _split(self, reply: Generation, token_ids: list[int]) -> Generation:
        """The reply after the thinking's end marker; the thinking apart (module docstring)."""
        found = split_tokens(token_ids, self._end_ids)
        decode = self._tokenizer.decode
        # The thinking starts after the start marker where the model wrote it (else the prompt opened it).
        begins = len(self._start_ids) if token_ids[: len(self._start_ids)] == self._start_ids else 0
        if found is None:  # still thinking when the reply stopped: no JSON
            return replace(
                reply,
                text="",
                logprobs=None,
                reasoning=decode(token_ids[begins:], skip_special_tokens=True).strip(),
                reasoning_tokens=len(token_ids) - begins,
                reasoning_ended=False,
            )
        end_at, content_at = found
        logprobs = reply.logprobs[content_at:] if reply.logprobs is not None else None
        return replace(
            reply,
            text=decode(token_ids[content_at:], skip_special_tokens=True),
            logprobs=logprobs,
            reasoning=decode(token_ids[begins:end_at], skip_special_tokens=True).strip(),
            reasoning_tokens=end_at - begins,
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
