"""SqliteJudgementStore on a temporary file: round trips, paging, migrations, durability, concurrency."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from judge_service.errors import InvalidGroupError
from judge_service.schemas import (
    Answer,
    AnswerResult,
    ChatMessage,
    Criterion,
    CriterionMark,
    JudgeRequest,
    JudgeResponse,
    StoredJudgement,
    Timings,
    Usage,
)
from judge_service.store import sqlite as store_module
from judge_service.store.base import JudgementStore
from judge_service.store.sqlite import MIGRATIONS, SqliteJudgementStore

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def make_judgement(
    judgement_id: str = "jdg-0001", *, run_id: str | None = "run-a", step: int | None = 3, n: int = 0
) -> StoredJudgement:
    """A realistic stored judgement: three answers, criteria marks, one unscored answer, two attempts."""
    request = JudgeRequest(
        conversation=[
            ChatMessage(role="system", content="You are a careful maths tutor."),
            ChatMessage(role="user", content="What is 17 * 3? Explain briefly."),
        ],
        reference="17 * 3 = 51, because 17 * 3 = 10 * 3 + 7 * 3 = 30 + 21.",
        answers=[
            Answer(id="a0", text="51. 10*3 + 7*3 = 30 + 21 = 51."),
            Answer(id="a1", text="It is 41."),
            Answer(id="a2", text="¯\\_(ツ)_/¯ — ünïcode"),
        ],
        criteria=[
            Criterion(name="correctness", description="Is it right?", mark_1="wrong", mark_5="right"),
            Criterion(name="tone", description="Is it kind?", mark_1="rude", mark_5="warm", weight=0.5),
        ],
        run_id=run_id,
        step=step,
        group_key="prompt-17",
    )
    return StoredJudgement(
        judgement_id=judgement_id,
        created_at=T0 + timedelta(seconds=n),
        status="partial",
        grader="judge",
        judge_model="qwen2.5-0.5b-instruct",
        prompt_version="group-v1",
        run_id=run_id,
        step=step,
        group_key="prompt-17",
        answers=[
            AnswerResult(
                id="a0",
                status="scored",
                score=1.0,
                criteria={
                    "correctness": CriterionMark(mark=5, score=1.0, reason="Matches the reference."),
                    "tone": CriterionMark(mark=5, score=1.0, reason="Clear and friendly."),
                },
                explanation="Correct with working.",
            ),
            AnswerResult(
                id="a1",
                status="scored",
                score=0.1667,
                criteria={
                    "correctness": CriterionMark(mark=1, score=0.0, reason="41 is wrong."),
                    "tone": CriterionMark(mark=3, score=0.5, reason="Neutral."),
                },
            ),
            AnswerResult(id="a2", status="unscored", score=None, error="judge output missing this answer"),
        ],
        usage=Usage(prompt_tokens=812, completion_tokens=240, judge_calls=2),
        timings=Timings(queue_ms=1.5, judge_ms=930.25, total_ms=934.0),
        attempts=2,
        request=request,
        raw_outputs=['{"scores": [', '{"scores": [{"id": "a0", "correctness": 5}]}'],
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


def user_version(path: Path) -> int:
    return int(query(path, "PRAGMA user_version")[0][0])


async def test_satisfies_protocol_and_creates_parent_dirs(store: SqliteJudgementStore, db_path: Path) -> None:
    as_protocol: JudgementStore = store
    assert as_protocol is store
    assert user_version(db_path) == len(MIGRATIONS)
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_round_trip(store: SqliteJudgementStore) -> None:
    judgement = make_judgement()
    await store.save(judgement)
    loaded = await store.get(judgement.judgement_id)
    assert loaded == judgement
    assert loaded is not None and loaded.request.answers[2].text == "¯\\_(ツ)_/¯ — ünïcode"
    assert await store.count() == 1


async def test_get_unknown_is_none(store: SqliteJudgementStore) -> None:
    assert await store.get("no-such-id") is None


async def test_duplicate_id_is_refused_and_original_kept(store: SqliteJudgementStore) -> None:
    original = make_judgement("dup")
    await store.save(original)
    with pytest.raises(ValueError, match="already stored"):
        await store.save(make_judgement("dup", run_id="run-other", n=9))
    assert await store.get("dup") == original
    assert await store.count() == 1


async def test_list_run_pages_oldest_first(store: SqliteJudgementStore) -> None:
    saved = []
    for i in range(6):
        j = make_judgement(f"a-{i}", run_id="run-a", step=i % 2, n=i)
        await store.save(j)
        saved.append(j)
        await store.save(make_judgement(f"b-{i}", run_id="run-b", step=i % 2, n=i))
    await store.save(make_judgement("none-0", run_id=None, step=None))

    pages = []
    cursor: str | None = None
    while True:
        page = await store.list_run("run-a", limit=2, cursor=cursor)
        pages.append(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p.items) for p in pages] == [2, 2, 2]
    assert pages[0].next_cursor is not None and pages[1].next_cursor is not None
    ids = [item.judgement_id for p in pages for item in p.items]
    assert ids == [f"a-{i}" for i in range(6)]
    # Items are the response without what produced it.
    first = pages[0].items[0]
    assert type(first) is JudgeResponse
    assert first == JudgeResponse.model_validate(saved[0].model_dump(exclude={"request", "raw_outputs"}))


async def test_list_run_step_filter_and_exact_last_page(store: SqliteJudgementStore) -> None:
    for i in range(5):
        await store.save(make_judgement(f"a-{i}", run_id="run-a", step=i % 2, n=i))
    await store.save(make_judgement("b-0", run_id="run-b", step=0))

    page = await store.list_run("run-a", step=0, limit=3)
    assert [i.judgement_id for i in page.items] == ["a-0", "a-2", "a-4"]
    assert page.next_cursor is None  # exactly `limit` rows left is still the last page

    page = await store.list_run("run-a", step=1, limit=1)
    assert [i.judgement_id for i in page.items] == ["a-1"]
    page = await store.list_run("run-a", step=1, limit=1, cursor=page.next_cursor)
    assert [i.judgement_id for i in page.items] == ["a-3"]
    assert page.next_cursor is None


async def test_list_run_unknown_run_is_empty(store: SqliteJudgementStore) -> None:
    await store.save(make_judgement())
    page = await store.list_run("run-zzz")
    assert page.items == [] and page.next_cursor is None


async def test_cursor_sees_rows_written_after_it_was_issued(store: SqliteJudgementStore) -> None:
    for i in range(3):
        await store.save(make_judgement(f"a-{i}", n=i))
    page = await store.list_run("run-a", limit=2)
    await store.save(make_judgement("a-3", n=3))
    page = await store.list_run("run-a", limit=2, cursor=page.next_cursor)
    assert [i.judgement_id for i in page.items] == ["a-2", "a-3"]


@pytest.mark.parametrize("cursor", ["", "!!!", "not a cursor", "MA", "LTE", "MDE", "eA", "Mw==", "x" * 200])
async def test_bad_cursor_is_invalid_group(store: SqliteJudgementStore, cursor: str) -> None:
    with pytest.raises(InvalidGroupError, match="pass next_cursor from the previous page"):
        await store.list_run("run-a", cursor=cursor)


async def test_limit_below_one_is_refused(store: SqliteJudgementStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.list_run("run-a", limit=0)


async def test_reopen_keeps_data_and_does_not_remigrate(db_path: Path) -> None:
    first = SqliteJudgementStore(db_path)
    await first.open()
    await first.open()  # idempotent on the same instance
    await first.save(make_judgement("kept"))
    await first.close()
    version = user_version(db_path)
    assert version == len(MIGRATIONS)

    # The migrations use plain CREATE, so re-running one would raise here.
    second = SqliteJudgementStore(db_path)
    await second.open()
    try:
        assert await second.get("kept") == make_judgement("kept")
        assert await second.count() == 1
    finally:
        await second.close()
    assert user_version(db_path) == version


async def test_newer_database_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    s = SqliteJudgementStore(db_path)
    with pytest.raises(RuntimeError, match="schema version"):
        await s.open()
    with pytest.raises(RuntimeError, match="not open"):
        await s.count()
    await s.close()
    assert user_version(db_path) == len(MIGRATIONS) + 1


async def test_failed_migration_rolls_back_whole_step(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.close()
    bad = "CREATE TABLE half_done (x INTEGER); INSERT INTO no_such_table VALUES (1);"
    monkeypatch.setattr(store_module, "MIGRATIONS", [*MIGRATIONS, bad])
    s = SqliteJudgementStore(db_path)
    with pytest.raises(sqlite3.OperationalError):
        await s.open()
    await s.close()
    assert user_version(db_path) == len(MIGRATIONS)
    tables = {r[0] for r in query(db_path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables


async def test_appended_migration_is_applied_once(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.save(make_judgement("before"))
    await s.close()
    extra = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL DEFAULT ';');"
    monkeypatch.setattr(store_module, "MIGRATIONS", [*MIGRATIONS, extra])
    for _ in range(2):
        s = SqliteJudgementStore(db_path)
        await s.open()
        assert await s.count() == 1
        await s.close()
    assert user_version(db_path) == len(MIGRATIONS) + 1


async def test_methods_after_close_raise(db_path: Path) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    await s.close()
    await s.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await s.save(make_judgement())
    with pytest.raises(RuntimeError, match="closed"):
        await s.get("x")
    with pytest.raises(RuntimeError, match="closed"):
        await s.list_run("run-a")
    with pytest.raises(RuntimeError, match="closed"):
        await s.open()


async def test_concurrent_saves_all_land(store: SqliteJudgementStore) -> None:
    judgements = [make_judgement(f"c-{i:02d}", n=i) for i in range(50)]
    await asyncio.gather(*(store.save(j) for j in judgements))
    assert await store.count() == 50
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_run("run-a", limit=7, cursor=cursor)
        ids += [i.judgement_id for i in page.items]
        if (cursor := page.next_cursor) is None:
            break
    assert sorted(ids) == [j.judgement_id for j in judgements]
    assert len(set(ids)) == 50


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
    store: SqliteJudgementStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = record_batches(store, monkeypatch)
    await store.save(make_judgement("alone"))
    judgements = [make_judgement(f"g-{i:02d}", n=i) for i in range(40)]
    await asyncio.gather(*(store.save(j) for j in judgements))
    assert batches[0] == ["alone"]  # a lone save does not wait for company
    assert sorted(i for b in batches[1:] for i in b) == sorted(j.judgement_id for j in judgements)
    assert len(batches) <= 3  # 40 concurrent saves, one or two transactions
    assert await store.count() == 41


async def test_commit_size_is_bounded(store: SqliteJudgementStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_ROWS_PER_COMMIT", 4)
    batches = record_batches(store, monkeypatch)
    await asyncio.gather(*(store.save(make_judgement(f"b-{i}", n=i)) for i in range(10)))
    assert [len(b) for b in batches] == [4, 4, 2]
    assert await store.count() == 10


async def test_a_conflict_fails_only_its_own_save_in_a_shared_commit(
    store: SqliteJudgementStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.save(make_judgement("taken"))
    batches = record_batches(store, monkeypatch)
    saves = [make_judgement("ok-1"), make_judgement("taken", n=5), make_judgement("ok-2")]
    saves += [make_judgement("twice", n=1), make_judgement("twice", n=2)]
    results = await asyncio.gather(*(store.save(j) for j in saves), return_exceptions=True)
    assert len(batches) == 1  # all five in one transaction
    failed = [type(r).__name__ if r is not None else None for r in results]
    assert failed == [None, "ValueError", None, None, "ValueError"]
    assert "already stored" in str(results[1])
    assert await store.count() == 4
    assert await store.get("taken") == make_judgement("taken")  # the original, not n=5
    assert await store.get("twice") == make_judgement("twice", n=1)


async def test_close_writes_the_saves_it_accepted(db_path: Path) -> None:
    s = SqliteJudgementStore(db_path)
    await s.open()
    saves = [asyncio.create_task(s.save(make_judgement(f"late-{i}", n=i))) for i in range(20)]
    await asyncio.sleep(0)  # the saves are queued, not yet written
    await s.close()
    await asyncio.gather(*saves)  # every one acknowledged...
    assert query(db_path, "SELECT count(*) FROM judgements") == [(20,)]  # ...and on disk


async def test_save_survives_sigkill_right_after(db_path: Path) -> None:
    """An acknowledged save is on disk even if the process dies before closing anything."""
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_store_sqlite import make_judgement
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
