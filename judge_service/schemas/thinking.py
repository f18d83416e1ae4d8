"""A thinking judge: the request's `thinking` and `reasoning_effort`, what a judgement keeps of the
thinking, and how the judge model thinks (docs/thinking.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge_service.schemas.common import ResponseModel, StrictModel

ReasoningEffort = Literal["low", "medium", "high"]
ThinkingSwitch = Literal["toggle", "always", "never"]
MAX_THINKING_BUDGET = 131072


class ThinkingBudget(StrictModel):
    budget: int = Field(
        ge=1,
        le=MAX_THINKING_BUDGET,
        description="Thinking tokens at most; then the end of the thinking is forced and the JSON follows.",
    )


Thinking = Literal["off", "on"] | ThinkingBudget
THINKING_DESCRIPTION = (
    "Whether a thinking judge reasons before it marks: 'off' (the JSON from the first token), 'on', or "
    '{"budget": N} (at most N thinking tokens). Default: JUDGE_THINKING, else "off" ("on" for a judge '
    "that always thinks). Refused (422) where the configured judge cannot do it (docs/thinking.md)."
)
REASONING_EFFORT_DESCRIPTION = (
    "For judges that take it (gpt-oss, OpenAI-compatible endpoints): how much the judge reasons. "
    "Default: JUDGE_REASONING_EFFORT, else the judge's own."
)


class ThinkingAttempt(ResponseModel):
    """One judge call's thinking, kept beside its raw output."""

    text: str | None = Field(
        description="The thinking text, capped (JUDGE_STORE_THINKING_CHARS); null when not stored."
    )
    text_truncated: bool = Field(default=False, description="The stored text was cut at the cap.")
    tokens: int | None = Field(description="Thinking tokens; null when the backend could not tell.")
    budget: int | None = Field(description="The call's thinking budget; null for 'on' without one.")
    budget_exhausted: bool | None = Field(description="The thinking reached its budget (the end was forced).")
    ended: bool = Field(description="The thinking ended; false: the call stopped while still thinking.")
    finish_reason: str | None
    recovered: bool = Field(
        default=False, description="The endpoint put the reply in its reasoning field; read from there."
    )


class ThinkingInfo(ResponseModel):
    """How the judge model thinks (docs/thinking.md)."""

    switch: ThinkingSwitch
    parser: str | None = Field(description="vLLM's reasoning parser.")
    enforces_budget: bool = Field(description='Whether thinking budgets ({"budget": N}) are accepted.')
    takes_reasoning_effort: bool
    source: str = Field(description="Where the profile came from: settings, the chat template, the name.")
