"""The jury slice: the judges of the `jury` grader (judging/jury/, docs/graders/juries.md)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class JurySettings(BaseSettings):
    """The jury slice: the judges of the `jury` grader (judging/jury/, docs/graders/juries.md)."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    jury: str | None = Field(
        default=None,
        description="The judges of the `jury` grader: a JSON list of {name, base_url, model} (an "
        'OpenAI-compatible endpoint) or {name, engine: "local"} (the service\'s own judge), each with '
        "optional weight, temperature, prompt_template, api_key, timeout_s; inline or a file's path.",
    )
    jury_quorum: int = Field(
        default=1,
        ge=1,
        le=8,
        description="Judges that must score an answer for the jury's score (fewer: unscored); the jury is "
        "ready (/readyz) when this many judges are.",
    )
