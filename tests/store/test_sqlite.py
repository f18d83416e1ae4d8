"""What only the SQLite store does: its file and pragmas, named migrations and the upgrade of databases made
before names were recorded, group commit, and durability across SIGKILL."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from judge_service.store import migrations as migrations_module
from judge_service.store.base import JudgementStore
from judge_service.store.migrations import MIGRATIONS, SQLITE, Migration
from judge_service.store.sqlite import SqliteJudgementStore
from tests.store.conftest import sqlite_count
from tests.store.samples import make_judgement

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
# Written by tests/data/make_fixture_4b52f6d.py with the code at 4b52f6d (schema in PRAGMA user_version 2).
OLD_DATABASE = DATA / "judgements-4b52f6d.sqlite3"
OLD_IDS = (
    "7756377f66d147f5adf3187faaadd882",
    "d2cbd43bef0d412c9df4dbc7ee5a1d19",
    "eb540f2786654f2d872677d4e0c8cebd",
)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "dir" / "judgements.sqlite3"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteJudgementStore]:
    s = SqliteJudgementStore(db_path)
    await s.open()
    yield s
    await s.close()


def query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Read the file behind the store's back, with a connection of our own (closed after)."""
    assert path.is_file()
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


ALL_NAMES = [m.name for m in MIGRATIONS]
NEXT_NAME = f"m{len(MIGRATIONS) + 1:03d}_notes"  # names sort in the order they were added


def user_version(path: Path) -> int:
    return int(query(path, "PRAGMA user_version")[0][0])


def applied(path: Path) -> list[str]:
    return [r[0] for r in query(path, "SELECT name FROM schema_migrations ORDER BY name")]


def with_migration(monkeypatch: pytest.MonkeyPatch, name: str, sql: str) -> tuple[Migration, ...]:
    extended = (*MIGRATIONS, Migration(name, {SQLITE: sql}))
    monkeypatch.setattr(migrations_module, "MIGRATIONS", extended)
    return extended


async def test_satisfies_protocol_creates_parent_dirs_and_is_durable(
    store: SqliteJudgementStore, db_path: Path
) -> None:
    as_protocol: JudgementStore = store
    assert as_protocol is store
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]
    # synchronous is per connection: read it on the store's own (2 = FULL: fsync at every commit).
    assert await store._run(lambda: store._connection().execute("PRAGMA synchronous").fetchone()[0]) == 2


async def test_migrations_are_recorded_by_name(store: SqliteJudgementStore, db_path: Path) -> None:
    assert applied(db_path) == [m.name for m in MIGRATIONS] == ALL_NAMES
    assert user_version(db_path) == len(MIGRATIONS)  # what older builds read


async def test_reopen_does_not_remigrate(db_path: Path) -> None:
    first = SqliteJudgementStore(db_path)
    await first.open()
    await first.save(make_judgement("kept"))
    await first.close()
    recorded = query(db_path, "SELECT name, applied_at FROM schema_migrations ORDER BY name")
    # The migrations use plain CREATE, so re-running one would raise here.
    second = SqliteJudgementStore(db_path)
    await second.open()
    try:
        assert await second.get("kept") == make_judgement("kept")
        assert sqlite_count(db_path) == 1
    finally:
        await second.close()
    assert query(db_path, "SELECT name, applied_at FROM schema_migrations ORDER BY name") == recorded


async def test_a_database_of_the_previous_build_upgrades_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    shutil.copy(OLD_DATABASE, path)
    assert user_version(path) == 2
    tables = {r[0] for r in query(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "schema_migrations" not in tables
    s = SqliteJudgementStore(path)
    await s.open()
    try:
        assert applied(path) == ALL_NAMES
        for judgement_id in OLD_IDS:
            found = await s.get(judgement_id)
            assert found is not None and found.run_id == "fixture-run"
        keyed = await s.get_by_idempotency_key("fixture-key-1")
        assert keyed is not None and keyed.judgement.judgement_id == OLD_IDS[0]
        page = await s.list_run("fixture-run")
        assert [i.judgement_id for i in page.items] == list(OLD_IDS)
        await s.save(make_judgement("after-upgrade", run_id="fixture-run"))
        assert sqlite_count(path) == 4
    finally:
        await s.close()


async def test_a_version_1_database_gets_the_later_migrations(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(db_path)) as conn:  # as the first release left it
        conn.executescript(MIGRATIONS[0].script(SQLITE))
        conn.execute("PRAGMA user_version = 1")
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.close()
    assert applied(db_path) == ALL_NAMES
    assert "idempotency_key" in {r[1] for r in query(db_path, "PRAGMA table_info(judgements)")}


async def test_newer_database_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    s = SqliteJudgementStore(db_path)
    with pytest.raises(RuntimeError, match="schema version"):
        await s.open()
    with pytest.raises(RuntimeError, match="not open"):
        await s.get("x")
    await s.close()
    assert user_version(db_path) == len(MIGRATIONS) + 1


async def test_a_database_with_an_unknown_migration_is_refused(db_path: Path) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.close()
    with closing(sqlite3.connect(db_path)) as conn, conn:
        conn.execute("INSERT INTO schema_migrations VALUES ('m099_from_the_future', '2030-01-01')")
    s = SqliteJudgementStore(db_path)
    with pytest.raises(RuntimeError, match="m099_from_the_future"):
        await s.open()
    await s.close()


async def test_failed_migration_rolls_back_whole_step(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.close()
    bad = "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);"
    with_migration(monkeypatch, "m003_bad", bad)
    s = SqliteJudgementStore(db_path)
    with pytest.raises(sqlite3.OperationalError):
        await s.open()
    await s.close()
    assert user_version(db_path) == len(MIGRATIONS)
    assert applied(db_path) == [m.name for m in MIGRATIONS]
    tables = {r[0] for r in query(db_path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables


async def test_appended_migration_is_applied_once(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.save(make_judgement("before"))
    await s.close()
    extra = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL DEFAULT ';');"
    extended = with_migration(monkeypatch, NEXT_NAME, extra)
    for _ in range(2):
        s = SqliteJudgementStore(db_path)
        await s.open()
        assert sqlite_count(db_path) == 1
        await s.close()
    assert user_version(db_path) == len(extended)
    assert applied(db_path)[-1] == NEXT_NAME


def record_batches(store: SqliteJudgementStore, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The judgement ids of every transaction the store writes from now on."""
    batches: list[list[str]] = []
    insert_batch = store._insert_batch

    def recording(batch: Any) -> list[Exception | None]:
        batches.append([p.judgement_id for p in batch])
        return insert_batch(batch)

    monkeypatch.setattr(store, "_insert_batch", recording)
    return batches


async def test_concurrent_saves_share_one_commit(
    store: SqliteJudgementStore, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = record_batches(store, monkeypatch)
    await store.save(make_judgement("alone"))
    judgements = [make_judgement(f"g-{i:02d}", n=i) for i in range(40)]
    await asyncio.gather(*(store.save(j) for j in judgements))
    assert batches[0] == ["alone"]  # a lone save does not wait for company
    assert sorted(i for b in batches[1:] for i in b) == sorted(j.judgement_id for j in judgements)
    assert len(batches) <= 3  # 40 concurrent saves, one or two transactions
    assert sqlite_count(db_path) == 41


async def test_commit_size_is_bounded(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteJudgementStore(db_path, max_rows_per_commit=4)
    await store.open()
    try:
        batches = record_batches(store, monkeypatch)
        await asyncio.gather(*(store.save(make_judgement(f"b-{i}", n=i)) for i in range(10)))
    finally:
        await store.close()
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sqlite_count(db_path) == 10


async def test_conflicts_share_one_commit_with_the_saves_that_succeed(
    store: SqliteJudgementStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.save(make_judgement("taken"))
    batches = record_batches(store, monkeypatch)
    saves = [make_judgement("ok-1"), make_judgement("taken", n=5), make_judgement("ok-2")]
    results = await asyncio.gather(*(store.save(j) for j in saves), return_exceptions=True)
    assert len(batches) == 1  # all three in one transaction
    assert [r is None for r in results] == [True, False, True]


async def test_save_survives_sigkill_right_after(db_path: Path) -> None:
    """An acknowledged save is on disk even if the process dies before closing anything."""
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from tests.store.samples import make_judgement
        from judge_service.store.sqlite import SqliteJudgementStore

        async def main():
            s = SqliteJudgementStore(Path({str(db_path)!r}))
            await s.open()
            await s.save(make_judgement("survivor"))
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
        """
    )
    done = await asyncio.create_subprocess_exec(sys.executable, "-c", script, stderr=subprocess.PIPE)
    _, err = await asyncio.wait_for(done.communicate(), timeout=60)
    assert done.returncode == -9, err.decode()
    s = SqliteJudgementStore(db_path)
    await s.open()
    try:
        assert await s.get("survivor") == make_judgement("survivor")
    finally:
        await s.close()
