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


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None  # "stop", "length", ...
    extra: dict[str, Any] = field(default_factory=dict)


class JudgeBackend(Protocol):
    """A judge model endpoint. Implementations raise errors.JudgeBackendError on failure."""

    @property
    def model_name(self) -> str: ...

    @property
    def max_context_tokens(self) -> int | None:
        """Prompt + completion token limit, when known."""
        ...

    @property
    def ready(self) -> bool: ...

    async def start(self) -> None:
        """Load or connect; after it returns, generate() works."""
        ...

    async def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """Tokens the chat-templated prompt takes, or None when the backend cannot tell."""
        ...

    async def generate(self, request: GenerationRequest) -> Generation:
        """One completion. Concurrent calls are how batching happens: the engine batches them."""
        ...

    async def close(self) -> None: ...
