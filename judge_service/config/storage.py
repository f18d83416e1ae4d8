"""The storage slice: where judgements are stored, and how long they are kept."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from judge_service.store.urls import check_url


class StorageSettings(BaseSettings):
    """The storage slice: where judgements are stored, and how long they are kept."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    database_url: SecretStr | None = Field(
        default=None,
        description="Where judgements are stored: sqlite:///relative/path, sqlite:////absolute/path, or "
        "postgresql://user:password@host:port/database (shared by several replicas). Unset: the SQLite file "
        "at db_path. Kept out of reprs and logs (a URL can hold a password).",
    )
    db_path: Path | None = Field(default=None, description="SQLite file; None: home_dir/judgements.sqlite3.")
    database_pool_size: int = Field(
        default=10, ge=1, le=1000, description="PostgreSQL: connections per worker process."
    )
    database_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="PostgreSQL: the longest a call waits to connect or for a pooled connection before "
        "the request is answered 503 store_unavailable (with Retry-After).",
    )
    migrate_on_start: bool = Field(
        default=False,
        description="PostgreSQL: apply pending migrations when a replica starts. Off by default: a "
        "deployment runs `judge-service migrate` once, and replicas refuse a database it has not migrated. "
        "SQLite files are always migrated when opened.",
    )
    retention_days: float | None = Field(
        default=None,
        gt=0,
        description="Delete judgements older than this many days, in the background, one replica at a "
        "time (labelled judgements are kept: docs/operations/reliability.md). Unset: keep everything.",
    )
    prune_interval_s: float = Field(
        default=600.0, ge=1, description="With JUDGE_RETENTION_DAYS: how often the background prune runs."
    )
    prune_batch_rows: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="Judgements deleted per transaction: each batch holds the database's write lock (SQLite) "
        "or its rows' locks (PostgreSQL) for about a millisecond per ten rows.",
    )
    prune_pause_s: float = Field(
        default=0.01, ge=0, le=10, description="Pause between prune batches, for saves and reads to go first."
    )
    idempotency_lease_s: float = Field(
        default=30.0,
        ge=1,
        le=3600,
        description="How long a claim on an Idempotency-Key outlives a process that stopped renewing it "
        "(crashed): a duplicate waiting on another replica judges the request after this.",
    )

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None:
            check_url(url.get_secret_value())  # ValueError says what is accepted
        return url
