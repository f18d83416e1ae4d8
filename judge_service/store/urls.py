"""Store URLs (JUDGE_DATABASE_URL): which forms are accepted and what they name. Standard library only, so
config/storage.py validates a URL without importing the store."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

POSTGRES_SCHEMES = ("postgresql", "postgres")
# The placeholders in <>, which redaction.py does not take for credentials, so the message keeps them.
ACCEPTED = (
    "sqlite:///relative/path.sqlite3, sqlite:////absolute/path.sqlite3 or "
    "postgresql://<user>:<password>@host:port/database"
)


def is_postgres(url: str) -> bool:
    return urlsplit(url).scheme in POSTGRES_SCHEMES


def check_url(url: str) -> None:
    """ValueError naming the accepted forms when `url` is not a store URL this build knows."""
    if is_postgres(url):
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
