"""The access slice: API keys, per-key shares, sign-in sessions and allowed host names."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class AccessSettings(BaseSettings):
    """The access slice: API keys, per-key shares, sign-in sessions and allowed host names."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    api_keys: SecretStr | None = Field(
        default=None,
        description="Comma-separated bearer tokens; when set, every route but /healthz, /readyz (and "
        "/metrics when public) needs 'Authorization: Bearer <key>'. Unset: no authentication.",
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="JSON file of named keys with scopes (judge, read, label, admin) and per-key limits, "
        "each key given by the hex of its SHA-256 (the file holds no secret); read again when it changes. "
        "Used beside JUDGE_API_KEYS, whose keys keep every scope. See docs/operations/security.md.",
    )
    session_secret: SecretStr | None = Field(
        default=None,
        description="Signs the pages' sign-in sessions. Unset: derived from JUDGE_API_KEYS, or random per "
        "process when only a keys file is set (sessions then end with the replica that signed them).",
    )
    key_max_groups_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="Each key's groups being judged at once on a replica, unless its entry in the keys "
        "file says otherwise; beyond it 429 over_share with Retry-After. Unset: no per-key limit.",
    )
    key_groups_per_minute: int | None = Field(
        default=None,
        ge=1,
        description="Each key's groups per minute on a replica (a token bucket holding a minute's worth), "
        "unless its entry in the keys file says otherwise. Unset: no per-key rate.",
    )
    metrics_public: bool = Field(default=True, description="Serve /metrics without an API key.")
    allowed_hosts: str | None = Field(
        default=None,
        description="Names a request may call the service by (its Host header) besides the address it is "
        "bound to (any address when bound to every interface) and, when bound to loopback or every "
        "interface, localhost: a comma list or a JSON list; '.example.com' for that domain and its "
        "subdomains; '*' for any name. Others get 400 host_not_allowed: a web page whose name resolves to "
        "this service (DNS rebinding) cannot read it. Behind a load balancer, list the names it forwards.",
    )

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: str | None) -> str | None:
        if value is not None:
            parse_allowed_hosts(value)  # ValueError names the setting and what to fix
        return value


def parse_allowed_hosts(value: str) -> tuple[str, ...]:
    """JUDGE_ALLOWED_HOSTS: host names as a comma list or a JSON list (api/middleware/hosts.py matches
    them); ValueError saying what to fix."""
    text = value.strip()
    if text.startswith("["):
        try:
            entries = json.loads(text)
        except ValueError:
            raise ValueError(f"JUDGE_ALLOWED_HOSTS is not a JSON list of names: {value!r}") from None
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise ValueError(f"JUDGE_ALLOWED_HOSTS: a JSON list must hold names (strings): {value!r}")
    else:
        entries = text.split(",")
    names = tuple(entry.strip() for entry in entries if entry.strip())
    for name in names:
        if name != "*" and ("*" in name or "/" in name or any(c.isspace() for c in name)):
            raise ValueError(
                f"JUDGE_ALLOWED_HOSTS: {name!r} is not a host name; give names such as 'judge.example.com', "
                "'.example.com' for a domain and its subdomains, or '*' for any name"
            )
        if name.count(":") == 1:
            raise ValueError(f"JUDGE_ALLOWED_HOSTS: {name!r}: give the name without a port (any port goes)")
    return names
