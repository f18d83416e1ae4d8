"""JUDGE_DATABASE_URL selects the store; a URL no store understands is refused at start-up, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from judge_service.config import Settings
from judge_service.store.factory import build_store
from judge_service.store.sqlite import SqliteJudgementStore


def test_default_is_sqlite_under_home(tmp_path: Path) -> None:
    store = build_store(Settings(home_dir=tmp_path))
    assert isinstance(store, SqliteJudgementStore) and store.path == tmp_path / "judgements.sqlite3"


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///rel/j.sqlite3", Path("rel/j.sqlite3")),
        ("sqlite:////abs/j.sqlite3", Path("/abs/j.sqlite3")),
    ],
)
def test_sqlite_url(url: str, path: Path) -> None:
    store = build_store(Settings(database_url=url))
    assert isinstance(store, SqliteJudgementStore) and store.path == path


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://db/x", "scheme 'mysql'"),
        ("sqlite://host/x", "three slashes"),
        ("sqlite:///", "three slashes"),
    ],
)
def test_unknown_url_is_refused_with_the_accepted_forms(url: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        Settings(database_url=url)
