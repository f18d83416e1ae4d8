"""The admission slice: backpressure on groups and requests, per worker process."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AdmissionSettings(BaseSettings):
    """The admission slice: backpressure on groups and requests, per worker process."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    max_groups_in_flight: int = Field(default=32, ge=1, description="Groups submitted to the judge at once.")
    max_groups_queued: int = Field(default=256, ge=0, description="Waiting groups before answering 429.")
    max_requests_in_flight: int = Field(
        default=512,
        ge=1,
        description="HTTP requests handled at once (probes aside), counted from when a request's body has "
        "arrived in full, so a client that sends slowly holds none; when it is full, 429 before the body is "
        "read. With max_request_bytes it bounds the memory the requests being handled hold (512 x 4 MiB).",
    )
