"""One `store` fixture parametrized over every store backend: the contract suite runs against each.

Each backend comes with `count`, a way to count its stored rows behind the store's back (the store
protocol has no count: nothing in the service needs one).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from judge_service.store.base import JudgementStore
from judge_service.store.postgres import PostgresJudgementStore
from judge_service.store.sqlite import SqliteJudgementStore


@dataclass
class StoreUnderTest:
    store: JudgementStore
    count: Callable[[], Awaitable[int]]
    reopen: Callable[[], JudgementStore]  # a second store on the same database (not yet opened)


def sqlite_count(path: Path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM judgements").fetchone()[0])


async def _sqlite(tmp_path: Path) -> StoreUnderTest:
    path = tmp_path / "judgements.sqlite3"

    async def count() -> int:
        return sqlite_count(path)

    return StoreUnderTest(SqliteJudgementStore(path), count, lambda: SqliteJudgementStore(path))


def postgres_count(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM judgements").fetchone()
        assert row is not None
        return int(row[0])


async def _postgres(request: pytest.FixtureRequest) -> StoreUnderTest:
    url = request.getfixturevalue("postgres_url")

    async def count() -> int:
        return postgres_count(url)

    def store() -> PostgresJudgementStore:
        return PostgresJudgementStore(url, migrate_on_open=True)

    return StoreUnderTest(store(), count, store)


async def _sqlite_backend(request: pytest.FixtureRequest) -> StoreUnderTest:
    return await _sqlite(request.getfixturevalue("tmp_path"))


BACKENDS = {"sqlite": _sqlite_backend, "postgres": _postgres}


@pytest.fixture(params=sorted(BACKENDS))
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[StoreUnderTest]:
    under_test = await BACKENDS[request.param](request)
    await under_test.store.open()
    yield under_test
    await under_test.store.close()


@pytest.fixture
def store(backend: StoreUnderTest) -> JudgementStore:
    return backend.store
