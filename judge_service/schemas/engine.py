"""The judge engine's sleep and wake (POST /v1/engine/sleep, /wake; GET /v1/engine)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from judge_service.schemas.common import ResponseModel, StrictModel


class SleepRequest(StrictModel):
    level: Literal[1, 2] = Field(
        default=1,
        description="vLLM's sleep level: 1 offloads the weights to CPU memory and drops the KV cache (a "
        "quick wake); 2 drops both (the most memory freed; the weights are reloaded on wake).",
    )
    drain: bool = Field(
        default=True,
        description="true: groups in flight finish, and groups that arrive meanwhile wait for the wake "
        "(JUDGE_SLEEP_HOLD_S); false: groups in flight finish, and new ones get 503 engine_asleep at once.",
    )


class EngineStatusView(ResponseModel):
    state: Literal["awake", "draining", "asleep", "waking", "verifying", "failed"]
    since: datetime = Field(description="When the engine entered this state.")
    level: int | None = Field(description="The sleep level, while draining, asleep or waking.")
    freed_bytes: int | None = Field(
        description="Device memory the last sleep freed, where the backend can tell (the in-process engine "
        "on a GPU); null elsewhere."
    )
    can_sleep: bool
    why_not: str | None = Field(description="Why the engine cannot sleep; null when it can.")
    error: str | None = Field(
        description="Why the engine is failed: a sleep or wake that failed, or `verify_failed: ...`, a wake "
        "after which the judge marked its probe groups otherwise than before its sleep."
    )
    last_check: str | None = Field(
        description="The last wake check: 'marks as before', or what moved; null before the first wake or "
        "with JUDGE_WAKE_CHECK=0."
    )
