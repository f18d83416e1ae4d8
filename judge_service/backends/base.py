"""What every judge backend offers: chat messages in, text out, with token accounting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from judge_service.backends.thinking_profile import ThinkingProfile


@dataclass(frozen=True)
class ThinkingCall:
    """How one call may think (backends/thinking_profile.py). `enabled` False: thinking off, where the model
    can turn it off (the JSON grammar then binds from the first token); a model that always thinks still
    does."""

    enabled: bool = False
    budget: int | None = None  # thinking tokens at most, then the end marker is forced
    effort: str | None = None  # reasoning_effort, for judges that take it
    min_tokens: int = 0  # tokens the judge must write before it may stop (JUDGE_THINKING_MIN_TOKENS)


THINKING_OFF = ThinkingCall()


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
    thinking: ThinkingCall = THINKING_OFF


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
    # One entry per generated token of `text` when log-probabilities were asked for and the engine gave
    # them; None otherwise (the judge then says expected marks are unavailable and uses the integer marks).
    logprobs: tuple[TokenLogprobs, ...] | None = None
    # A thinking judge's reply: `text` and `logprobs` hold only what follows the thinking.
    reasoning: str | None = None  # the thinking text; None when the judge did not think
    reasoning_tokens: int | None = None  # None when the backend cannot tell
    reasoning_ended: bool = True  # False: the reply stopped while the judge was still thinking
    misrouted: bool = False  # the endpoint put the reply in its reasoning field; recovered from there


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

    @property
    def thinking_profile(self) -> ThinkingProfile | None:
        """How the judge model thinks (backends/thinking_profile.py); None until start() read the model."""
        ...

    async def start(self) -> None:
        """Load or connect; after it returns, generate() works."""
        ...

    async def check_health(self) -> BackendHealth:
        """Whether generate() can work now; asked periodically after start() (backends/readiness.py).
        Cheap, bounded in time, never raises."""
        ...

    async def count_prompt_tokens(
        self, messages: list[dict[str, str]], thinking: ThinkingCall = THINKING_OFF
    ) -> int | None:
        """Tokens the chat-templated prompt takes (the template's thinking switch as `thinking` sets it), or
        None when the backend cannot tell."""
        ...

    async def generate(self, request: GenerationRequest) -> Generation:
        """One completion. Concurrent calls are how batching happens: the engine batches them."""
        ...

    async def close(self) -> None: ...
