"""Builds the configured judgement store from JUDGE_DATABASE_URL (or the embedded SQLite default)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

from judge_service.store.base import JudgementStore
from judge_service.store.sqlite import SqliteJudgementStore
from judge_service.store.urls import is_postgres, sqlite_path


class StoreSettings(Protocol):
    """What the factory reads of the service's settings (config.Settings has it; the store never imports
    config)."""

    @property
    def database_url(self) -> SecretStr | None: ...
    @property
    def database_pool_size(self) -> int: ...
    @property
    def database_timeout_s(self) -> float: ...
    @property
    def migrate_on_start(self) -> bool: ...
    def resolved_db_path(self) -> Path: ...


def build_store(settings: StoreSettings, *, migrate_on_open: bool | None = None) -> JudgementStore:
    """SQLite at `database_url`, else at db_path, else at home_dir/judgements.sqlite3; PostgreSQL for a
    postgresql:// URL. `migrate_on_open` overrides JUDGE_MIGRATE_ON_START (the migrate command)."""
    url = settings.database_url
    if url is None:
        return SqliteJudgementStore(settings.resolved_db_path())
    value = url.get_secret_value()
    if is_postgres(value):
        from judge_service.store.postgres import PostgresJudgementStore

        return PostgresJudgementStore(
            value,
            pool_size=settings.database_pool_size,
            timeout_s=settings.database_timeout_s,
            migrate_on_open=settings.migrate_on_start if migrate_on_open is None else migrate_on_open,
        )
    return SqliteJudgementStore(sqlite_path(value))
