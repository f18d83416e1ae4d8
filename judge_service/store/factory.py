"""Builds the configured judgement store from JUDGE_DATABASE_URL (or the embedded SQLite default)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from judge_service.store.base import JudgementStore
from judge_service.store.sqlite import SqliteJudgementStore

if TYPE_CHECKING:  # config validates URLs with sqlite_path below, so it cannot be imported at the top
    from judge_service.config import Settings

SCHEMES = ("sqlite",)


def build_store(settings: Settings) -> JudgementStore:
    """SQLite at `database_url` (sqlite:///relative/path or sqlite:////absolute/path), else at db_path,
    else at home_dir/judgements.sqlite3. ValueError names the accepted forms for any other URL."""
    url = settings.database_url
    if url is None:
        return SqliteJudgementStore(settings.resolved_db_path())
    return SqliteJudgementStore(sqlite_path(url.get_secret_value()))


def sqlite_path(url: str) -> Path:
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(
            f"JUDGE_DATABASE_URL has scheme {parts.scheme or '(none)'!r}; supported: "
            "sqlite:///relative/path.sqlite3 or sqlite:////absolute/path.sqlite3"
        )
    if parts.netloc or not parts.path.lstrip("/"):
        raise ValueError("JUDGE_DATABASE_URL for SQLite is sqlite:///<path>: three slashes, then a file path")
    return Path(parts.path[1:])  # sqlite:///rel -> "rel", sqlite:////abs -> "/abs"
