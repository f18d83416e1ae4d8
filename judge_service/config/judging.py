"""The judging slice: the LLM judge's prompt, decoding, reasons and retries, which its caller takes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# Package data (pyproject.toml), so a wheel installed anywhere finds its templates.
PACKAGED_PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


class JudgingSettings(BaseSettings):
    """The judging slice: the LLM judge's prompt, decoding, reasons and retries, which its caller takes."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    prompt_template: str = Field(default="judge_group", description="Template folder under prompts_dir.")
    prompts_dir: Path | None = Field(
        default=None, description="Folder of prompt templates; None: the ones shipped in the package."
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    reason_max_chars: int | None = Field(
        default=None,
        ge=16,
        le=1000,
        description="Bound on each reason. None: 60 for the embedded default judge (its latency), else 120.",
    )
    decoding: Literal["group", "per_answer"] | None = Field(
        default=None,
        description="How the judge decodes a group when a request names none: 'group', one reply marking "
        "every answer; 'per_answer', one reply per answer over a shared prompt prefix (each reply still from "
        "a prompt showing the whole group). None: per_answer for the embedded default judge, else group.",
    )
    reason_words: bool | None = Field(
        default=None,
        description="Constrain reasons by the output grammar to words (letters first; numbers only as words, "
        "never runs of digits and dots). None: on for the embedded default judge, off for other judges.",
    )
    reason_language: Literal["auto", "en", "de", "fr", "es", "it", "nl", "pt"] | None = Field(
        default=None,
        description="The language the judge writes reasons in when a request names none: a language code, "
        "'auto' (the conversation's language), or None (no instruction: the judge's own choice).",
    )
    reasons: Literal["inline", "none", "sample"] = Field(
        default="inline",
        description="Whether the judge writes a reason before each mark when a request names nothing: "
        "'inline', 'none' (marks only; reasons on demand), or 'sample' (inline for a seeded share of groups, "
        "JUDGE_REASON_SAMPLE_RATE).",
    )
    reason_sample_rate: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="With reasons 'sample': the share of groups judged with reasons (drawn by judgement id).",
    )
    rubric_items: int = Field(
        default=12,
        ge=3,
        le=20,
        description="Items in a rubric the judge writes (POST /v1/rubrics, rubric 'generate') when a request "
        "names no number.",
    )
    rubric_instructions: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="Extra instructions to the rubric writer when a request gives none (e.g. the domain).",
    )
    score_from: Literal["mark", "expected"] = Field(
        default="mark",
        description="What a criterion's score is made from when a request names nothing: the integer mark, "
        "or the judge's probability-weighted (expected) mark, which breaks ties.",
    )
    mark_logprobs: int = Field(
        default=10,
        ge=0,
        le=20,
        description="Log-probabilities asked for per generated token (the most likely alternatives), from "
        "which expected marks are computed; 0: not asked, expected marks null.",
    )
    parse_retries: int = Field(default=2, ge=0, le=5, description="Extra judge calls when output is invalid.")
    group_deadline_s: float = Field(default=300.0, gt=0, description="Wall-clock budget for one group.")
    shuffle_answers: bool = Field(
        default=True,
        description="Show the judge the answers in a seeded shuffled order (position bias); the seed and "
        "order are stored with the judgement.",
    )
    trajectory_result_chars: int = Field(
        default=2000,
        ge=200,
        le=100_000,
        description="A trajectory's tool result or call arguments longer than this are shown to the judge "
        "cut in the middle, with a mark saying how many characters went (docs/trajectories.md).",
    )
    trajectory_max_chars: int = Field(
        default=24_000,
        ge=1000,
        le=1_000_000,
        description="An answer's trajectory still longer than this, once results are cut, is shown with the "
        "text of its middle steps cut, from the middle outwards; the first and last two steps and every "
        "call stay (docs/trajectories.md).",
    )

    @property
    def embedded_judge(self) -> bool:
        """Whether the judge is the embedded one, which some defaults follow. The backend slice knows;
        this slice alone (a caller built in a test) judges as a chosen model does. `Settings` answers
        from its backend slice."""
        return False

    def resolved_decoding(self) -> Literal["group", "per_answer"]:
        if self.decoding is not None:
            return self.decoding
        return "per_answer" if self.embedded_judge else "group"

    def resolved_reason_words(self) -> bool:
        return self.embedded_judge if self.reason_words is None else self.reason_words

    def resolved_reason_max_chars(self) -> int:
        if self.reason_max_chars is not None:
            return self.reason_max_chars
        return 60 if self.embedded_judge else 120

    def resolved_prompts_dir(self) -> Path:
        return self.prompts_dir or PACKAGED_PROMPTS
