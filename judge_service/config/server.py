"""The server slice: where it listens, how it reports readiness, its worker processes."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    """The server slice: where it listens, how it reports readiness, its worker processes."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Interface to bind.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port to bind (0 picks a free one).")
    access_log: bool = Field(
        default=False,
        description="Log a line per HTTP request. Off by default: /metrics counts requests by route and "
        "status, and a line per group at a thousand groups/s costs a few percent of the server's CPU.",
    )

    health_interval_s: float = Field(
        default=2.0, gt=0, le=300, description="How often the judge backend's health is checked (/readyz)."
    )
    ready_requires_store: bool = Field(
        default=False,
        description="/readyz also asks the judgement database (one trivial query, at most "
        "JUDGE_READY_STORE_TIMEOUT_S): 503 `store_unavailable` when it does not answer. Off by default: "
        "replicas sharing one database would all leave the load balancer together when it fails over, and "
        "a judgement whose save fails is already a truthful, retryable 503 (docs/operations/reliability.md).",
    )
    ready_store_timeout_s: float = Field(
        default=2.0, gt=0, le=30, description="With ready_requires_store: how long /readyz waits for it."
    )
    dead_engine_exit_s: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="When the in-process engine dies: seconds of answering /readyz 503 `failed` (so probes "
        "and scrapes see it) before the process stops and exits non-zero for its supervisor to restart it.",
    )

    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Worker processes serving one port (uvicorn workers), for the openai and fake backends "
        "(the in-process engine is one per machine). Every admission limit below holds per worker.",
    )
