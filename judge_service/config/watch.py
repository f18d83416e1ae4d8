"""The watch slice: canaries planted to watch for reward hacking (watch/; docs/watching.md)."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from judge_service.schemas import (
    CANARY_KINDS,
    CanaryKind,
    parse_canary_kinds,
)


class WatchSettings(BaseSettings):
    """The watch slice: canaries planted to watch for reward hacking (watch/; docs/watching.md)."""

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
