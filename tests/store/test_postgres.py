"""What only the PostgreSQL store does (the shared contract is test_contract.py): migrations run once by
a job, durable commits checked at open, and 503-able failures while the server is away."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from judge_service.errors import StoreUnavailableError
from judge_service.store.migrations import MIGRATIONS
from judge_service.store.postgres import PostgresJudgementStore
from tests.postgres_server import ThrowawayCluster, fresh_database, run_migrate
from tests.store.samples import make_judgement


def applied(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


async def test_a_replica_refuses_an_unmigrated_database_and_names_the_command(postgres_url: str) -> None:
    store = PostgresJudgementStore(postgres_url)
    with pytest.raises(RuntimeError, match="judge-service migrate"):
        await store.open()
    migrator = PostgresJudgementStore(postgres_url)
    migrator._migrate_on_open = True
    await migrator.open()
    await migrator.close()
    assert applied(postgres_url) == [m.name for m in MIGRATIONS]
    await store.open()  # now current
    await store.save(make_judgement("after-migrate"))
    await store.close()


async def test_replicas_migrating_at_once_apply_each_migration_once(postgres_url: str) -> None:
    stores = [PostgresJudgementStore(postgres_url, migrate_on_open=True) for _ in range(4)]
    await asyncio.gather(*(s.open() for s in stores))
    assert applied(postgres_url) == [m.name for m in MIGRATIONS]
    assert await stores[0].migrate() == []  # nothing left
    await asyncio.gather(*(s.close() for s in stores))


async def test_a_database_that_may_lose_commits_is_refused(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        name = conn.info.dbname
        conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    store = PostgresJudgementStore(postgres_url, migrate_on_open=True)
    with pytest.raises(RuntimeError, match="synchronous_commit=off"):
        await store.open()


async def test_the_store_commits_durably_on_its_own_connections(postgres_url: str) -> None:
    store = PostgresJudgementStore(postgres_url, migrate_on_open=True)
    await store.open()
    try:

        async def settings(conn: psycopg.AsyncConnection) -> tuple[str, str, bool]:  # type: ignore[type-arg]
            sync = await (await conn.execute("SHOW synchronous_commit")).fetchone()
            fsync = await (await conn.execute("SHOW fsync")).fetchone()
            assert sync is not None and fsync is not None
            return str(sync[0]), str(fsync[0]), conn.autocommit

        assert await store._run(settings) == ("on", "on", True)
    finally:
        await store.close()


async def test_while_the_server_is_away_calls_fail_as_unavailable_then_recover() -> None:
    cluster = await asyncio.to_thread(ThrowawayCluster)
    try:
        with fresh_database(cluster.url) as url:
            store = PostgresJudgementStore(url, migrate_on_open=True, timeout_s=1.0)
            await store.open()
            await store.save(make_judgement("before"))
            await asyncio.to_thread(cluster.crash)
            with pytest.raises(StoreUnavailableError, match="judgement database is unavailable; retry"):
                await store.save(make_judgement("while-away"))
            with pytest.raises(StoreUnavailableError):
                await store.get("before")
            await asyncio.to_thread(cluster.start)
            # The pool replaces its dead connections: a save succeeds again within the "few seconds" the
            # error promises (a loaded machine can take longer than the 1 s pool timeout of one try).
            deadline = time.monotonic() + 30
            while True:
                try:
                    await store.save(make_judgement("after"))
                    break
                except StoreUnavailableError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.5)
            assert await store.get("before") == make_judgement("before")
            assert await store.get("while-away") is None
            await store.close()
    finally:
        await asyncio.to_thread(cluster.stop)


def test_the_migrate_command_applies_pending_migrations_once(postgres_url: str) -> None:
    first = run_migrate(postgres_url)
    assert first.returncode == 0, first.stderr
    assert all(f"applied migration {m.name}" in first.stderr for m in MIGRATIONS)
    assert applied(postgres_url) == [m.name for m in MIGRATIONS]
    again = run_migrate(postgres_url)
    assert again.returncode == 0 and "applied migration" not in again.stderr
    assert "up to date" in again.stdout


def test_the_migrate_command_fails_clearly_without_a_database(refused_url: str) -> None:
    port = refused_url.rsplit(":", 1)[1]
    done = run_migrate(f"postgresql://postgres@127.0.0.1:{port}/none", JUDGE_DATABASE_TIMEOUT_S="1")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("judge-service migrate: ")
