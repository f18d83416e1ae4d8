"""The watch slice: canaries planted to watch for reward hacking, and the audit judge that re-judges a
share of groups (watch/; docs/watching.md)."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from judge_service.schemas import (
    CANARY_KINDS,
    CanaryKind,
    parse_canary_kinds,
)


class WatchSettings(BaseSettings):
    """The watch slice: canaries planted to watch for reward hacking, and the audit judge that re-judges a
    share of groups (watch/; docs/watching.md)."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    canary_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="The share of groups that get a canary answer (a planted bad answer judged with the "
        "group, never returned), when the request does not say (`canaries`); 0: none.",
    )
    canary_kinds: str | None = Field(
        default=None,
        description="The canary kinds JUDGE_CANARY_RATE and `canaries: on` draw from, comma-separated "
        f"({', '.join(CANARY_KINDS)}); None: all.",
    )

    audit: str | None = Field(
        default=None,
        description="The audit judge, which re-judges a share of each run's groups in the background to "
        "tell gaming from progress: a JSON object shaped as a JUDGE_JURY judge ({name, base_url, model} or "
        '{name, engine: "local"}, with optional temperature, prompt_template, api_key, timeout_s), inline '
        "or a file's path, or the name of a JUDGE_JURY judge. None: no audit.",
    )
    audit_rate: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="The share of each run step's groups the audit judge re-judges (with JUDGE_AUDIT).",
    )
    audit_backlog: int = Field(
        default=64,
        ge=1,
        le=1_000,
        description="Groups waiting for the audit judge, each holding its request (up to "
        "JUDGE_MAX_REQUEST_BYTES); a group drawn while it is full is dropped from the audit and counted "
        '(judge_audit_groups_total{outcome="dropped"}), never queued without end.',
    )
    audit_concurrency: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Groups the audit judge judges at once. It starts one only while no training group waits "
        "for the judge's admission.",
    )

    @field_validator("canary_kinds")
    @classmethod
    def _known_canary_kinds(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_canary_kinds(value)
            except ValueError as exc:
                raise ValueError(f"JUDGE_CANARY_KINDS: {exc}") from None
        return value

    def resolved_canary_kinds(self) -> tuple[CanaryKind, ...]:
        return CANARY_KINDS if self.canary_kinds is None else parse_canary_kinds(self.canary_kinds)
