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
    # Per-answer decoding: the one answer this call marks (None: the call marks every answer shown).
    answer_id: str | None = None
    # Ask for the log-probabilities of this many most likely tokens at every generated position (0: none);
    # the judge reads them at each mark to compute the expected mark (judging/llm/expected.py).
    top_logprobs: int = 0


@dataclass(frozen=True)
class TokenLogprobs:
    """One generated token, its log-probability and those of the engine's most likely alternatives."""

    token: str  # the token's text as decoded
    logprob: float
    top: tuple[tuple[str, float], ...]  # (token text, log-probability), most likely first


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None  # "stop", "length", ...
    extra: dict[str, Any] = field(default_factory=dict)
    # One entry per generated token when log-probabilities were asked for and the engine gave them;
    # None otherwise (the judge then says expected marks are unavailable and uses the integer marks).
    logprobs: tuple[TokenLogprobs, ...] | None = None


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
        """Whether generate() can work now; asked periodically after start() (backends/readiness.py).
        Cheap, bounded in time, never raises."""
        ...

    async def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """Tokens the chat-templated prompt takes, or None when the backend cannot tell."""
        ...

    async def generate(self, request: GenerationRequest) -> Generation:
        """One completion. Concurrent calls are how batching happens: the engine batches them."""
        ...

    async def close(self) -> None: ...
