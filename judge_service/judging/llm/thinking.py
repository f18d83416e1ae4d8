"""Thinking, as the judge asks for it: a request's `thinking` and `reasoning_effort` checked against what the
configured judge can do, the engine call they become, and what is kept of each call's thinking.

A combination the judge cannot do is refused (422) with the reason, never quietly changed: `off` for a
model that always thinks, `on` for one that never does, a budget the backend cannot hold, an effort the
model does not take. A call whose thinking did not end before the reply stopped is `reasoning_truncated`
(caller.py retries it once with a smaller budget, then leaves its answers unscored, never 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from judge_service.backends.base import Generation, ThinkingCall
from judge_service.backends.thinking_profile import ThinkingProfile
from judge_service.errors import InvalidGroupError
from judge_service.schemas import Thinking, ThinkingAttempt, ThinkingBudget

REASONING_TRUNCATED = "reasoning_truncated"


@dataclass(frozen=True)
class ThinkingMode:
    """A request's thinking, resolved. Hashable: part of the judge's options."""

    mode: Literal["off", "on"] = "off"
    budget: int | None = None
    effort: str | None = None

    @property
    def enabled(self) -> bool:
        return self.mode == "on"

    def call(self, min_tokens: int) -> ThinkingCall:
        return ThinkingCall(
            enabled=self.enabled, budget=self.budget, effort=self.effort, min_tokens=min_tokens
        )

    def config(self) -> dict[str, Any] | None:
        """The fingerprint's entry; None for off without an effort (judgements before thinking existed)."""
        if not self.enabled and self.effort is None:
            return None
        entry: dict[str, Any] = {"mode": self.mode}
        if self.budget is not None:
            entry["budget"] = self.budget
        if self.effort is not None:
            entry["reasoning_effort"] = self.effort
        return entry


OFF = ThinkingMode()


def resolve_thinking(
    asked: Thinking | None,
    effort: str | None,
    *,
    default: Thinking | None,
    default_effort: str | None,
    profile: ThinkingProfile,
    model: str,
) -> ThinkingMode:
    """The request's thinking (else the setting's, else off, or on for a model that always thinks),
    refused with InvalidGroupError where the judge cannot do it (module docstring)."""
    chosen = asked if asked is not None else default
    if chosen is None:
        chosen = "on" if profile.switch == "always" else "off"
    budget = chosen.budget if isinstance(chosen, ThinkingBudget) else None
    mode: Literal["off", "on"] = "off" if chosen == "off" else "on"
    effort = effort if effort is not None else (default_effort if profile.takes_effort else None)
    where = {"thinking": chosen if isinstance(chosen, str) else chosen.model_dump(), "model": model}
    if mode == "on" and not profile.thinks:
        raise InvalidGroupError(
            f"the judge model {model!r} does not think (thinking switch 'never'); send thinking 'off', or "
            "name its thinking profile (JUDGE_THINKING_SWITCH, JUDGE_REASONING_PARSER) if it does",
            details=where,
        )
    if mode == "off" and profile.switch == "always":
        raise InvalidGroupError(
            f"the judge model {model!r} always thinks; thinking 'off' is not possible with it: send "
            '"on" or {"budget": N}',
            details=where,
        )
    if budget is not None and not profile.enforces_budget:
        why = (
            "gpt-oss takes reasoning_effort instead"
            if profile.gpt_oss
            else "the backend has no reasoning parser to hold it (JUDGE_REASONING_PARSER)"
        )
        raise InvalidGroupError(
            f"the judge cannot hold thinking to a budget: {why}; send thinking 'on'", details=where
        )
    if effort is not None and not profile.takes_effort:
        raise InvalidGroupError(
            f"the judge model {model!r} takes no reasoning_effort (gpt-oss and OpenAI-compatible "
            "endpoints of thinking models do); leave it out",
            details={**where, "reasoning_effort": effort},
        )
    return ThinkingMode(mode, budget, effort)


def truncated_note(reply: Generation, thinking: ThinkingCall) -> str:
    """Why a call's thinking gave no reply, for the answers it leaves unscored."""
    used = f" after {reply.reasoning_tokens} tokens" if reply.reasoning_tokens is not None else ""
    if reply.finish_reason == "length":
        return f"{REASONING_TRUNCATED}: the judge's thinking used up its output tokens{used} before the JSON"
    budget = f" (budget {thinking.budget})" if thinking.budget is not None else ""
    return f"{REASONING_TRUNCATED}: the judge stopped while still thinking{used}{budget}, before the JSON"


def smaller_budget(reply: Generation, thinking: ThinkingCall, max_tokens: int) -> int:
    """The budget of the one retry of a truncated call: half of what the thinking used (or was allowed)."""
    used = reply.reasoning_tokens or thinking.budget or max_tokens
    return max(1, min(used, thinking.budget or used) // 2)


def attempt_record(
    reply: Generation, thinking: ThinkingCall, *, keep_text: bool, max_chars: int
) -> ThinkingAttempt:
    """What is stored of one call's thinking (beside its raw output)."""
    text = reply.reasoning if keep_text else None
    cut = text is not None and len(text) > max_chars
    exhausted = None
    if thinking.budget is not None and reply.reasoning_tokens is not None:
        exhausted = reply.reasoning_tokens >= thinking.budget
    return ThinkingAttempt(
        text=text[:max_chars] if text is not None and cut else text,
        text_truncated=cut,
        tokens=reply.reasoning_tokens,
        budget=thinking.budget,
        budget_exhausted=exhausted,
        ended=reply.reasoning_ended,
        finish_reason=reply.finish_reason,
        recovered=reply.misrouted,
    )
