"""The thinking slice: thinking judges (backends/thinking_profile.py; docs/thinking.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from judge_service.schemas import (
    MAX_THINKING_BUDGET,
    ReasoningEffort,
    Thinking,
    ThinkingBudget,
    ThinkingSwitch,
)


class ThinkingSettings(BaseSettings):
    """The thinking slice: thinking judges (backends/thinking_profile.py; docs/thinking.md)."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    thinking: str | None = Field(
        default=None,
        description="Whether the judge thinks when a request names nothing: 'off', 'on', a budget of "
        "thinking tokens (an integer, or {\"budget\": N}). None: 'off', or 'on' for a judge that always "
        "thinks.",
    )
    thinking_switch: ThinkingSwitch | None = Field(
        default=None,
        description="How the judge model thinks: 'toggle' (a chat-template keyword turns it on and off), "
        "'always', 'never'. None: from the model's files (its chat template, its type) or, over HTTP, its "
        "name; 'never' for models it does not know.",
    )
    thinking_template_kwarg: str = Field(
        default="enable_thinking",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The chat-template keyword that switches thinking (toggle models).",
    )
    reasoning_parser: str | None = Field(
        default=None,
        description="vLLM's reasoning parser for the judge (qwen3, deepseek_r1, openai_gptoss, or one a "
        "plugin registers). In-process it is given to the engine; over HTTP it names what the server runs "
        "(started with --reasoning-parser). None: the model family's.",
    )
    reasoning_parser_plugin: Path | None = Field(
        default=None, description="A Python file registering a reasoning parser (vLLM's plugin mechanism)."
    )
    chat_template: Path | None = Field(
        default=None,
        description="A Jinja chat template file replacing the model's own (in-process engine; start an "
        "endpoint with --chat-template instead).",
    )
    thinking_special_markers: bool = Field(
        default=False,
        description="Over HTTP: the parser's markers are special tokens, which vLLM drops from the text "
        "unless asked (skip_special_tokens=false is then sent). Found by itself in-process.",
    )
    reasoning_effort: ReasoningEffort | None = Field(
        default=None, description="reasoning_effort when a request names none (judges that take it)."
    )
    thinking_max_tokens: int = Field(
        default=8192,
        ge=16,
        le=MAX_THINKING_BUDGET,
        description="Thinking 'on' without a budget: the thinking tokens allowed before the call counts "
        "as reasoning_truncated.",
    )
    thinking_min_tokens: int = Field(
        default=0,
        ge=0,
        le=MAX_THINKING_BUDGET,
        description="Tokens a thinking judge must write before it may stop (capped at the budget): for "
        "small models that end the sequence before closing their thinking.",
    )
    store_thinking: bool = Field(
        default=True, description="Keep each attempt's thinking text with the stored judgement."
    )
    store_thinking_chars: int = Field(
        default=16384, ge=0, le=1_000_000, description="The most thinking characters kept per attempt."
    )

    @field_validator("thinking")
    @classmethod
    def _known_thinking(cls, value: str | None) -> str | None:
        if value is not None:
            parse_thinking(value)  # ValueError says what is accepted
        return value

    @field_validator("chat_template", "reasoning_parser_plugin")
    @classmethod
    def _file_exists(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path} is not a file")
        return path

    def resolved_thinking(self) -> Thinking | None:
        return parse_thinking(self.thinking) if self.thinking is not None else None

    def chat_template_sha256(self) -> str | None:
        """A prefix of the SHA-256 of JUDGE_CHAT_TEMPLATE's file (part of the judge's fingerprint)."""
        if self.chat_template is None:
            return None
        return hashlib.sha256(self.chat_template.read_bytes()).hexdigest()[:16]


def parse_thinking(value: str) -> Thinking:
    """JUDGE_THINKING: 'off', 'on', an integer budget, or {"budget": N}."""
    text = value.strip()
    if text in ("off", "on"):
        return "off" if text == "off" else "on"
    try:
        if text.isdigit():
            return ThinkingBudget(budget=int(text))
        return ThinkingBudget.model_validate_json(text)
    except ValueError as exc:
        raise ValueError(
            f"JUDGE_THINKING must be 'off', 'on', a budget of thinking tokens (1-{MAX_THINKING_BUDGET}) or "
            f'{{"budget": N}}; got {value!r}'
        ) from exc
