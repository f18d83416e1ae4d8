"""The limits slice: request sizes, connection timeouts and the shutdown drain."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class LimitSettings(BaseSettings):
    """The limits slice: request sizes, connection timeouts and the shutdown drain."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    drain_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="At shutdown (SIGTERM), how long requests in flight may take to finish; new ones get "
        "503 shutting_down meanwhile. Keep the orchestrator's grace period above it.",
    )
    max_request_bytes: int = Field(
        default=4 * 2**20,
        ge=1024,
        description="Largest request body accepted (413 too_large beyond it); 4 MiB holds dozens of "
        "typical groups per batch, while a single group that large would not fit a judge's context.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Seconds a connection has to send a request's headers, from when it opens or from the "
        "request's first byte after a pause; past it the connection is closed (408 request_timeout when "
        "part of a request came). Slow or silent clients hold a socket no longer than this.",
    )
    body_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds a request's body has to arrive in full, from its headers; past it 408 "
        "request_timeout and the connection is closed. 4 MiB at 1 Mbit/s takes about 35 s.",
    )
    keep_alive_s: int = Field(
        default=15,
        ge=1,
        le=3600,
        description="Seconds an idle keep-alive connection stays open between requests. Above the 5 s an "
        "httpx client keeps one idle, so the client closes first; behind a load balancer that reuses "
        "connections longer (an AWS ALB: 60 s), set it above the balancer's idle timeout.",
    )
