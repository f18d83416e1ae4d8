"""The assembly slice: groups sent one member per request (POST /v1/judge/member; assembly/)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class MemberAssemblySettings(BaseSettings):
    """The assembly slice: groups sent one member per request (POST /v1/judge/member; assembly/)."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    member_assembly: Literal["local", "shared"] | None = Field(
        default=None,
        description="Where groups sent one member per request are assembled: `local` in this process "
        "(members of a group must reach the same process), `shared` in the database (members may reach any "
        "replica or worker). Default: shared on PostgreSQL or with several workers, else local.",
    )
    member_deadline_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds from a group's first member until it is judged with the members present.",
    )
    member_min_members: int = Field(
        default=2, ge=1, le=64, description="At the deadline, judge if at least this many members came."
    )
    member_max_open_groups: int = Field(
        default=10_000, ge=1, description="Groups collecting members at once."
    )
    member_max_waiting: int = Field(default=100_000, ge=1, description="Member requests waiting at once.")
