"""Thinking judges: how the configured judge model thinks, and what the backend can hold it to.

A *profile* says how the configured judge model thinks:
- `switch`: `toggle` (a chat-template keyword turns thinking on and off: Qwen3), `always` (the template
  opens the thinking block itself: DeepSeek-R1 distills, Qwen3-Thinking-2507, gpt-oss), `never`;
- the chat-template keyword (`enable_thinking` for Qwen3), vLLM's reasoning parser (and a plugin file
  that registers one), and the parser's marker strings;
- what the backend can enforce: a thinking-token budget (vLLM's `thinking_token_budget`), a
  `reasoning_effort` (gpt-oss and OpenAI-compatible endpoints).

Settings name any of it (JUDGE_THINKING_SWITCH, JUDGE_REASONING_PARSER, ...); what they leave unnamed
comes from the model's files (its chat template, its model type) or, over HTTP where those are not
visible, from the model's name (`profile_for_model`).

How a reply is split into thinking and JSON is reasoning_split.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from judge_service.schemas import ThinkingSwitch

if TYPE_CHECKING:
    from judge_service.config import Settings


# What vLLM's common parsers mark thinking with; Mistral's reasoning models use the bracketed pair.
THINK_START, THINK_END = "<think>", "</think>"
# Markers never allowed to reach the judge unbroken from a caller's text (answers, reference,
# conversation): an answer must not be able to close the judge's thinking or open a harmony channel.
KNOWN_MARKERS = (
    THINK_START,
    THINK_END,
    "[THINK]",
    "[/THINK]",
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|end|>",
    "<|return|>",
)

# vLLM parsers whose markers are the <think> pair.
_THINK_TAG_PARSERS = frozenset({"qwen3", "deepseek_r1", "deepseek_v3", "granite", "olmo3", "ernie45"})
GPT_OSS_PARSER = "openai_gptoss"


@dataclass(frozen=True)
class ThinkingProfile:
    switch: ThinkingSwitch = "never"
    template_kwarg: str = "enable_thinking"
    parser: str | None = None  # vLLM reasoning parser name
    parser_plugin: str | None = None  # a file registering the parser (vLLM's --reasoning-parser-plugin)
    start_marker: str | None = None
    end_marker: str | None = None
    # Whether the backend can hold thinking to a budget, and whether the model takes reasoning_effort.
    enforces_budget: bool = False
    takes_effort: bool = False
    # Over HTTP: vLLM drops special tokens from the text by default, and a parser that looks for markers
    # that are special tokens then sees none. Sent as skip_special_tokens=false when set.
    keep_special_tokens: bool = False
    source: str = "default"  # where the profile came from, for /v1/graders and logs

    @property
    def thinks(self) -> bool:
        return self.switch != "never"

    @property
    def gpt_oss(self) -> bool:
        return self.parser == GPT_OSS_PARSER

    def markers(self) -> tuple[str, ...]:
        own = tuple(m for m in (self.start_marker, self.end_marker) if m)
        return own + tuple(m for m in KNOWN_MARKERS if m not in own)


NO_THINKING = ThinkingProfile()


def markers_of(parser: str | None) -> tuple[str | None, str | None]:
    if parser in _THINK_TAG_PARSERS:
        return THINK_START, THINK_END
    return None, None


def profile_for_model(
    name: str, *, chat_template: str | None = None, model_type: str | None = None
) -> ThinkingProfile:
    """The profile of the common thinking families, from what is known of the model: its chat template and
    model type when its files are at hand (in-process), else its name (an HTTP endpoint's model)."""
    lowered = name.lower()
    if model_type == "gpt_oss" or "gpt-oss" in lowered:
        return ThinkingProfile(
            switch="always", parser=GPT_OSS_PARSER, takes_effort=True, source="model: gpt-oss"
        )
    if chat_template is not None:
        if "enable_thinking" in chat_template and THINK_START in chat_template:
            return _think_tags("toggle", "qwen3", "chat template: enable_thinking")
        if THINK_START in chat_template:
            return _think_tags("always", "deepseek_r1", "chat template: opens <think>")
    # Over HTTP, or a template that does not say (early R1 distill templates left <think> to the model).
    if "qwen3" in lowered and "thinking" in lowered:
        return _think_tags("always", "deepseek_r1", "model name: Qwen3 thinking")
    if "qwen3" in lowered and "instruct" not in lowered:
        return _think_tags("toggle", "qwen3", "model name: Qwen3")
    if "deepseek-r1" in lowered or "-r1-distill" in lowered or "qwq" in lowered:
        return _think_tags("always", "deepseek_r1", "model name: R1 family")
    return replace(NO_THINKING, source="chat template: no thinking") if chat_template else NO_THINKING


def _think_tags(switch: ThinkingSwitch, parser: str, source: str) -> ThinkingProfile:
    return ThinkingProfile(
        switch=switch, parser=parser, start_marker=THINK_START, end_marker=THINK_END, source=source
    )


@dataclass(frozen=True)
class ProfileSettings:
    """What the operator named (JUDGE_THINKING_SWITCH, ...); None: left to the model's files or name."""

    switch: ThinkingSwitch | None = None
    template_kwarg: str = "enable_thinking"
    parser: str | None = None
    parser_plugin: str | None = None
    special_markers: bool = False

    def apply(self, detected: ThinkingProfile) -> ThinkingProfile:
        """The detected profile with what the settings name put over it."""
        profile = replace(detected, template_kwarg=self.template_kwarg, parser_plugin=self.parser_plugin)
        if self.parser is not None and self.parser != detected.parser:
            start, end = markers_of(self.parser)
            profile = replace(profile, parser=self.parser, start_marker=start, end_marker=end)
            if profile.switch == "never" and self.switch is None:
                profile = replace(profile, switch="toggle")  # a parser is named: the model thinks
        if self.switch is not None:
            profile = replace(profile, switch=self.switch)
        if self.special_markers:
            profile = replace(profile, keep_special_tokens=True)
        named = self.switch is not None or self.parser is not None
        return replace(profile, source="settings" if named else profile.source)


def profile_settings(settings: Settings) -> ProfileSettings:
    """The thinking profile fields the operator named (JUDGE_THINKING_SWITCH, ...)."""
    plugin = settings.reasoning_parser_plugin
    return ProfileSettings(
        switch=settings.thinking_switch,
        template_kwarg=settings.thinking_template_kwarg,
        parser=settings.reasoning_parser,
        parser_plugin=str(plugin) if plugin is not None else None,
        special_markers=settings.thinking_special_markers,
    )
