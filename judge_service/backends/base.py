"""What every judge backend offers: chat messages in, text out, with token accounting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class GenerationRequest:
    messages: list[dict[str, str]]  # chat messages: {"role": ..., "content": ...}
    max_tokens: int
    json_schema: dict[str, Any] | None = None  # constrain decoding when the backend can
    temperature: float = 0.0
    seed: int | None = None
    request_id: str | None = None
    # Names the group: every call for one group (answer orders, retries) carries the same id, so that
    # a router in front of several engines can keep them together (backends/openai_http.py).
    group_id: str | None = None


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None  # "stop", "length", ...
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BackendHealth:
    """A health check's answer. `fatal`: the backend cannot recover in this process (the in-process
    engine died), so the service exits for its supervisor to restart it."""

    ok: bool
    fatal: bool = False
    error: str | None = None


class JudgeBackend(Protocol):
    """A judge model endpoint. Implementations raise errors.JudgeBackendError on failure."""

    @property
    def model_name(self) -> str: ...

    @property
    def max_context_tokens(self) -> int | None:
        """Prompt + completion token limit, when known."""
        ...

    async def start(self) -> None:
        """Load or connect; after it returns, generate() works."""
        ...

    async def check_health(self) -> BackendHealth:
        """Whether generate() can work now; asked periodically after start() (judge_service/readiness.py).
        Cheap, bounded in time, never raises."""
        ...

    async def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """Tokens the chat-templated prompt takes, or None when the backend cannot tell."""
        ...

    async def generate(self, request: GenerationRequest) -> Generation:
        """One completion. Concurrent calls are how batching happens: the engine batches them."""
        ...

    async def close(self) -> None: ...
