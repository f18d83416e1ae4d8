"""Builds the configured judgement store from JUDGE_DATABASE_URL (or the embedded SQLite default)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from judge_service.store.base import JudgementStore
from judge_service.store.sqlite import SqliteJudgementStore

if TYPE_CHECKING:  # config validates URLs with check_url below, so it cannot be imported at the top
    from judge_service.config import Settings

POSTGRES_SCHEMES = ("postgresql", "postgres")
ACCEPTED = (
    "sqlite:///relative/path.sqlite3, sqlite:////absolute/path.sqlite3 or "
    "postgresql://user:password@host:port/database"
)


def build_store(settings: Settings, *, migrate_on_open: bool | None = None) -> JudgementStore:
    """SQLite at `database_url`, else at db_path, else at home_dir/judgements.sqlite3; PostgreSQL for a
    postgresql:// URL. `migrate_on_open` overrides JUDGE_MIGRATE_ON_START (the migrate command)."""
    url = settings.database_url
    if url is None:
        return SqliteJudgementStore(settings.resolved_db_path())
    value = url.get_secret_value()
    if urlsplit(value).scheme in POSTGRES_SCHEMES:
        from judge_service.store.postgres import PostgresJudgementStore

        return PostgresJudgementStore(
            value,
            pool_size=settings.database_pool_size,
            timeout_s=settings.database_timeout_s,
            migrate_on_open=settings.migrate_on_start if migrate_on_open is None else migrate_on_open,
        )
    return SqliteJudgementStore(sqlite_path(value))


def check_url(url: str) -> None:
    """ValueError naming the accepted forms when `url` is not a store URL this build knows."""
    scheme = urlsplit(url).scheme
    if scheme in POSTGRES_SCHEMES:
        if not urlsplit(url).hostname and "host=" not in url:
            raise ValueError(f"JUDGE_DATABASE_URL for PostgreSQL names no host; accepted: {ACCEPTED}")
        return
    sqlite_path(url)


def sqlite_path(url: str) -> Path:
    parts = urlsplit(url)
    if parts.scheme != "sqlite":
        raise ValueError(f"JUDGE_DATABASE_URL has scheme {parts.scheme or '(none)'!r}; accepted: {ACCEPTED}")
    if parts.netloc or not parts.path.lstrip("/"):
        raise ValueError("JUDGE_DATABASE_URL for SQLite is sqlite:///<path>: three slashes, then a file path")
    return Path(parts.path[1:])  # sqlite:///rel -> "rel", sqlite:////abs -> "/abs"
