"""Builds the configured judge backend. Heavy imports (vLLM) happen only for the backend chosen."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from judge_service.backends.base import JudgeBackend
from judge_service.config import Settings
from judge_service.metrics import JudgeMetrics

if TYPE_CHECKING:
    from judge_service.backends.vllm_engine import EngineOptions


def build_backend(
    settings: Settings, metrics: JudgeMetrics, *, transport: httpx.AsyncBaseTransport | None = None
) -> JudgeBackend:
    """The configured backend; `transport` replaces the network for backend=openai (tests)."""
    if settings.backend == "fake":
        from judge_service.backends.fake import FakeBackend, fake_thinking_profile
        from judge_service.backends.thinking_profile import NO_THINKING, profile_settings

        return FakeBackend(
            model_name=settings.served_model_name or "fake-judge",
            latency_s=settings.fake_latency_s,
            record=False,
            thinking=fake_thinking_profile(profile_settings(settings).apply(NO_THINKING)),
        )
    if settings.backend == "openai":
        from judge_service.backends.openai_http import OpenAIHTTPBackend

        return OpenAIHTTPBackend.from_settings(
            settings,
            transport=transport,
            on_retry=lambda reason: metrics.retries.labels(reason=f"http_{reason}").inc(),
        )
    from judge_service.backends.vllm_engine import VLLMEngineBackend

    return VLLMEngineBackend(_engine_options(settings), metrics)


def _engine_options(settings: Settings) -> EngineOptions:
    from judge_service.backends.default_model import DEFAULT_MODEL_NAME
    from judge_service.backends.thinking_profile import profile_settings
    from judge_service.backends.vllm_engine import EngineOptions

    return EngineOptions(
        model=settings.model,
        served_model_name=settings.served_model_name or settings.model or DEFAULT_MODEL_NAME,
        home_dir=settings.home_dir,
        dtype=settings.dtype,
        max_model_len=settings.max_model_len,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        kv_cache_gib=settings.kv_cache_gib,
        enforce_eager=settings.enforce_eager,
        enable_prefix_caching=settings.enable_prefix_caching,
        max_num_seqs=settings.max_num_seqs,
        thinking=profile_settings(settings),
        chat_template=settings.chat_template,
        sleep_mode=settings.sleep_mode,
    )
