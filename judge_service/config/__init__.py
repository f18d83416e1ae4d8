"""Settings, read from JUDGE_* environment variables. Every field has a default: no configuration needed.

One slice per concern (vLLM's `vllm/config/`), each a `BaseSettings` of its own that the subsystem takes
directly: server, backend, judging, thinking, watch, graders, jury, admission, assembly, limits, access,
storage. `Settings` is all of them together, and holds what crosses slices: the validators and defaults
that read two of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator
from pydantic_settings import SettingsConfigDict

from judge_service.config.access import AccessSettings, parse_allowed_hosts
from judge_service.config.admission import AdmissionSettings
from judge_service.config.assembly import MemberAssemblySettings
from judge_service.config.backend import BackendSettings
from judge_service.config.graders import GraderSettings
from judge_service.config.judging import PACKAGED_PROMPTS, JudgingSettings
from judge_service.config.jury import JurySettings
from judge_service.config.limits import LimitSettings
from judge_service.config.server import ServerSettings
from judge_service.config.storage import StorageSettings
from judge_service.config.thinking import ThinkingSettings, parse_thinking
from judge_service.config.watch import WatchSettings
from judge_service.store.urls import is_postgres


# The slices are listed last first: pydantic orders the fields of several bases from the last one, so
# the settings keep the order of the concerns (and of docs/reference/configuration.md).
class Settings(
    StorageSettings,
    AccessSettings,
    LimitSettings,
    MemberAssemblySettings,
    AdmissionSettings,
    JurySettings,
    GraderSettings,
    ThinkingSettings,
    WatchSettings,
    JudgingSettings,
    BackendSettings,
    ServerSettings,
):
    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    @property
    def embedded_judge(self) -> bool:
        """The judge is the small model embedded for a first run, not one chosen by the operator."""
        return self.backend == "vllm" and self.model is None

    @model_validator(mode="after")
    def _chat_template_in_process(self) -> Settings:
        if self.chat_template is not None and self.backend == "openai":
            raise ValueError(
                "JUDGE_CHAT_TEMPLATE replaces the template of the in-process engine; for an endpoint, start "
                "it with --chat-template instead"
            )
        return self

    @model_validator(mode="after")
    def _workers_need_a_remote_judge(self) -> Settings:
        if self.workers > 1 and self.backend == "vllm":
            raise ValueError(
                "JUDGE_WORKERS > 1 needs JUDGE_BACKEND=openai (a vLLM server or router): each worker would "
                "load its own in-process engine"
            )
        return self

    def resolved_member_assembly(self) -> Literal["local", "shared"]:
        if self.member_assembly is not None:
            return self.member_assembly
        url = self.database_url.get_secret_value() if self.database_url else ""
        several = self.workers > 1 or is_postgres(url)
        return "shared" if several else "local"

    def resolved_db_path(self) -> Path:
        return self.db_path or self.home_dir / "judgements.sqlite3"


__all__ = [
    "PACKAGED_PROMPTS",
    "AccessSettings",
    "AdmissionSettings",
    "BackendSettings",
    "GraderSettings",
    "JudgingSettings",
    "JurySettings",
    "LimitSettings",
    "MemberAssemblySettings",
    "ServerSettings",
    "Settings",
    "StorageSettings",
    "ThinkingSettings",
    "WatchSettings",
    "parse_allowed_hosts",
    "parse_thinking",
]
