"""PostgreSQL store of judgements, shared by every replica of the service (JUDGE_DATABASE_URL=postgresql://).

The same contract as the embedded SQLite store (store/base.py), on a pool of autocommit connections
(psycopg 3) with explicit transactions:

- Acknowledged means committed: `save()` returns after its transaction's COMMIT, with the server's
  default `synchronous_commit=on` (checked at open: a server set to `off` is refused).
- Group commit (store/group_commit.py), as on SQLite: queued saves share the next transaction. A row
  that breaks a constraint fails only its own save (ON CONFLICT DO NOTHING, then the rows not inserted
  are told apart), never the batch.
- Paging without gaps across replicas: keyset paging on `id` skips a row whose id was taken before a
  page was read but committed after it. Each write transaction therefore takes one transaction-scoped
  advisory lock before it takes ids, so ids become visible in the order they were taken. Writes are
  batches, so this serializes commits, not rows.
- Migrations (store/migrations.py) run under an advisory lock, one transaction each, so replicas and the
  `judge-service migrate` job can start together. By default a replica does not migrate: it refuses to
  start on a database with pending migrations and names the command that applies them.
- A database that cannot be reached (restart, failover, pool exhausted) raises StoreUnavailableError; the
  pool checks each connection before lending it, so the store recovers by itself when the server is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool

from judge_service.errors import StoreUnavailableError
from judge_service.quality.divergence import GroupDivergence
from judge_service.schemas import (
    AuditRecord,
    ExplainedReasons,
    HumanLabels,
    JudgementPage,
    Rubric,
    RunPage,
    RunSteps,
    RunSummary,
    StoredJudgement,
)
from judge_service.store import (
    audits,
    codec,
    explained,
    member_groups,
    migrations,
    retention,
    rubrics,
    run_views,
)
from judge_service.store.base import (
    Claim,
    IdempotencyKey,
    IdempotencyKeyTaken,
    KeyedJudgement,
    MemberGroup,
    MemberJoin,
)
from judge_service.store.group_commit import MAX_ROWS_PER_COMMIT, GroupCommit, PendingSave
from judge_service.store.migrations import POSTGRES
from judge_service.store.retention import PrunedBatch

__all__ = ["PostgresJudgementStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Advisory lock keys (distinct bigints): migrations, the order of id-taking writes, pruning.
_MIGRATION_LOCK = 0x6A756467_65000001
_WRITE_LOCK = 0x6A756467_65000002
_PRUNE_LOCK = 0x6A756467_65000003  # one replica prunes at a time (service/retention.py)

_NOW = "extract(epoch from clock_timestamp())"
_INSERT = (
    f"INSERT INTO judgements ({codec.ROW_COLUMNS})"
    f" VALUES ({', '.join(['%s'] * codec.ROW_WIDTH)})"
    " ON CONFLICT DO NOTHING RETURNING judgement_id"
)
_GROUPS = member_groups.MemberGroupSql.for_dialect("%s", _NOW)
_CLAIM = (
    "INSERT INTO idempotency_claims AS c (idempotency_key, request_hash, owner, lease_until)"
    f" VALUES (%s, %s, %s, {_NOW} + %s)"
    " ON CONFLICT (idempotency_key) DO UPDATE SET request_hash = excluded.request_hash,"
    " owner = excluded.owner, lease_until = excluded.lease_until"
    f" WHERE c.lease_until < {_NOW} OR c.owner = excluded.owner"
    " RETURNING owner"
)


class PostgresJudgementStore:
    """`JudgementStore` on PostgreSQL. Call `open()` before use and `close()` at shutdown."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        timeout_s: float = 5.0,
        migrate_on_open: bool = False,
        max_rows_per_commit: int = MAX_ROWS_PER_COMMIT,
    ) -> None:
        self._url = url
        self._pool_size = pool_size
        self._timeout_s = timeout_s
        self._migrate_on_open = migrate_on_open
        self._pool: AsyncConnectionPool | None = None
        self._closed = False
        self._commits = GroupCommit(
            lambda batch: self._run(functools.partial(self._insert_batch, batch=batch)),
            max_rows=max_rows_per_commit,
        )

    # ------------------------------------------------------------------ plumbing

    def _live_pool(self) -> AsyncConnectionPool:
        if self._closed:
            raise RuntimeError("the judgement store is closed")
        if self._pool is None:
            raise RuntimeError("the judgement store is not open")
        return self._pool

    async def _run(self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        """`work` on a pooled connection; StoreUnavailableError when the server cannot be reached."""
        pool = self._live_pool()
        try:
            async with pool.connection() as conn:
                return await work(conn)
        except psycopg.OperationalError as exc:  # includes the pool's timeout
            log.warning("judgement database %s unavailable: %s", self._where, _first_line(exc))
            # The server's address and error stay in the log, not in what callers see.
            raise StoreUnavailableError(
                "the judgement database is unavailable; retry in a few seconds"
            ) from exc

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect; migrate when asked to (else refuse a database with pending migrations). Idempotent."""
        if self._closed:
            raise RuntimeError("the judgement store is closed")
        if self._pool is not None:
            return
        pool = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=self._pool_size,
            timeout=self._timeout_s,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(self._timeout_s))},
            check=AsyncConnectionPool.check_connection,
            open=False,
        )
        try:
            await pool.open(wait=True, timeout=self._timeout_s)
            self._pool = pool
            if self._migrate_on_open:
                await self.migrate()
            else:
                await self._require_current_schema()
            await self._require_durable_commits()
        except BaseException:
            self._pool = None
            await pool.close()
            raise

    async def migrate(self) -> list[str]:
        """Apply the pending named migrations (one transaction each, under an advisory lock); their names."""
        if self._pool is None:
            raise RuntimeError("the judgement store is not open")
        applied_now: list[str] = []
        while True:
            name = await self._run(self._migrate_one)
            if name is None:
                return applied_now
            log.info("judgement database: applied migration %s", name)
            applied_now.append(name)

    async def _migrate_one(self, conn: psycopg.AsyncConnection[Any]) -> str | None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute(migrations.MIGRATIONS_TABLE_SQL[POSTGRES])
            todo = migrations.pending(await _applied(conn), migrations.MIGRATIONS, where=self._where)
            if not todo:
                return None
            await conn.execute(todo[0].script(POSTGRES))  # no parameters: several statements may run
            await conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)",
                (todo[0].name, codec.now_text()),
            )
            return todo[0].name

    async def _require_current_schema(self) -> None:
        async def pending(conn: psycopg.AsyncConnection[Any]) -> list[str]:
            exists = await (
                await conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
            ).fetchone()
            applied = await _applied(conn) if exists and exists[0] else []
            return [m.name for m in migrations.pending(applied, migrations.MIGRATIONS, where=self._where)]

        todo = await self._run(pending)
        if todo:
            raise RuntimeError(
                f"judgement database {self._where} has pending migrations ({', '.join(todo)}); apply them "
                "with `judge-service migrate` (once per deployment, before the replicas start), or set "
                "JUDGE_MIGRATE_ON_START=true"
            )

    async def _require_durable_commits(self) -> None:
        async def setting(conn: psycopg.AsyncConnection[Any]) -> str:
            row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
            return str(row[0]) if row else ""

        value = await self._run(setting)
        if value == "off":
            raise RuntimeError(
                f"judgement database {self._where} has synchronous_commit=off: a judgement acknowledged to a "
                "trainer could be lost in a crash; set it to on (the default) for this database or role"
            )

    @property
    def _where(self) -> str:
        info = psycopg.conninfo.conninfo_to_dict(self._url)
        return f"postgresql://{info.get('host', '')}:{info.get('port', 5432)}/{info.get('dbname', '')}"

    async def close(self) -> None:
        """Write the saves already accepted, then close the pool; later calls raise. Idempotent."""
        if self._closed:
            return
        await self._commits.flush()
        self._closed = True
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # ------------------------------------------------------------------ writes

    async def save(self, judgement: StoredJudgement, *, idempotency: IdempotencyKey | None = None) -> None:
        """Write one judgement and commit it; ValueError if its id is already stored, IdempotencyKeyTaken if
        another judgement holds its key, StoreUnavailableError if the server could not be reached."""
        self._live_pool()
        await self._commits.save(judgement, idempotency)

    async def _insert_batch(
        self, conn: psycopg.AsyncConnection[Any], *, batch: Sequence[PendingSave]
    ) -> list[Exception | None]:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            inserted: list[bool] = []
            async with conn.cursor() as cur:
                await cur.executemany(_INSERT, [p.row for p in batch], returning=True)
                while True:
                    inserted.append(cur.rowcount == 1)
                    if not cur.nextset():
                        break
            refused = [p.judgement_id for p, ok in zip(batch, inserted, strict=True) if not ok]
            stored_ids: set[str] = set()
            if refused:
                # A refused row whose id is stored broke the id's uniqueness; any other lost its key.
                rows = await (
                    await conn.execute(
                        "SELECT judgement_id FROM judgements WHERE judgement_id = ANY(%s)", (refused,)
                    )
                ).fetchall()
                stored_ids = {r[0] for r in rows}
            settled = [
                p.idempotency.key for p, ok in zip(batch, inserted, strict=True) if ok and p.idempotency
            ]
            if settled:  # no claim outlives its judgement
                await conn.execute(
                    "DELETE FROM idempotency_claims WHERE idempotency_key = ANY(%s)", (settled,)
                )
        errors: list[Exception | None] = []
        for pending, ok in zip(batch, inserted, strict=True):
            if ok:
                errors.append(None)
            elif pending.idempotency is not None and pending.judgement_id not in stored_ids:
                errors.append(IdempotencyKeyTaken(pending.idempotency.key))
            else:
                errors.append(
                    ValueError(f"judgement {pending.judgement_id!r} is already stored; ids must be unique")
                )
        return errors

    async def claim(self, idempotency: IdempotencyKey, *, owner: str, lease_s: float) -> Claim:
        async def claim(conn: psycopg.AsyncConnection[Any]) -> Claim:
            while True:
                won = await (
                    await conn.execute(_CLAIM, (idempotency.key, idempotency.request_hash, owner, lease_s))
                ).fetchone()
                if won is not None:
                    return Claim(owned=True, request_hash=idempotency.request_hash)
                held = await (
                    await conn.execute(
                        "SELECT request_hash FROM idempotency_claims WHERE idempotency_key = %s",
                        (idempotency.key,),
                    )
                ).fetchone()
                if held is not None:
                    return Claim(owned=False, request_hash=str(held[0]))
                # The holder finished between the two statements: claim again.

        return await self._run(claim)

    async def renew(self, key: str, *, owner: str, lease_s: float) -> bool:
        async def renew(conn: psycopg.AsyncConnection[Any]) -> bool:
            cur = await conn.execute(
                f"UPDATE idempotency_claims SET lease_until = {_NOW} + %s WHERE idempotency_key = %s"
                " AND owner = %s",
                (lease_s, key, owner),
            )
            return cur.rowcount == 1

        return await self._run(renew)

    async def release(self, key: str, *, owner: str) -> None:
        async def release(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.execute(
                "DELETE FROM idempotency_claims WHERE idempotency_key = %s AND owner = %s", (key, owner)
            )

        await self._run(release)

    # ------------------------------------------------------------------ member groups

    async def join_group(self, join: MemberJoin) -> MemberGroup:
        async def join_group(conn: psycopg.AsyncConnection[Any]) -> MemberGroup:
            async with conn.transaction():
                await conn.execute(_GROUPS.open_group, member_groups.open_params(join))
                # FOR UPDATE: joins of one group take turns; no two replicas close it with other members.
                group = await _member_group(conn, join.group_key, lock=True)
                if group is None:
                    raise RuntimeError(f"member group {join.group_key!r} vanished inside its transaction")
                group, added = member_groups.join(group, join)
                if added:
                    await conn.execute(_GROUPS.add_member, (join.group_key, join.answer_id, join.text))
                if group.closed_now:
                    await conn.execute(_GROUPS.close_group, (join.group_key,))
                return group

        return await self._run(join_group)

    async def member_group(self, group_key: str) -> MemberGroup | None:
        return await self._run(functools.partial(_member_group, group_key=group_key, lock=False))

    async def close_group(self, group_key: str) -> MemberGroup | None:
        async def close(conn: psycopg.AsyncConnection[Any]) -> MemberGroup | None:
            async with conn.transaction():
                closed_now = (await conn.execute(_GROUPS.close_group, (group_key,))).rowcount == 1
                group = await _member_group(conn, group_key, lock=False)
                return None if group is None else replace(group, closed_now=closed_now)

        return await self._run(close)

    @contextlib.asynccontextmanager
    async def prune_lock(self) -> AsyncIterator[bool]:
        # A session lock on a connection held for the whole prune: a replica that dies drops it with its
        # connection, so a prune never stays locked out.
        pool = self._live_pool()
        try:
            async with pool.connection() as conn:
                row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (_PRUNE_LOCK,))).fetchone()
                held = bool(row and row[0])
                try:
                    yield held
                finally:
                    if held:
                        await conn.execute("SELECT pg_advisory_unlock(%s)", (_PRUNE_LOCK,))
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(
                "the judgement database is unavailable; retry in a few seconds"
            ) from exc

    async def prune_judgements(
        self,
        before: datetime,
        *,
        run_id: str | None = None,
        include_labelled: bool = False,
        limit: int = 1000,
    ) -> PrunedBatch:
        select = retention.oldest_sql("%s", run=run_id is not None, include_labelled=include_labelled)
        params = retention.oldest_params(before, run_id, limit)

        async def prune(conn: psycopg.AsyncConnection[Any]) -> PrunedBatch:
            async with conn.transaction():
                rows = await (await conn.execute(select, params)).fetchall()
                if not rows:
                    return PrunedBatch()
                ids = [r[1] for r in rows]
                reasons = await conn.execute(
                    "DELETE FROM explained_reasons WHERE judgement_id = ANY(%s)", (ids,)
                )
                labels = await conn.execute("DELETE FROM human_labels WHERE judgement_id = ANY(%s)", (ids,))
                audited = await conn.execute("DELETE FROM audits WHERE judgement_id = ANY(%s)", (ids,))
                deleted = await conn.execute(
                    "DELETE FROM judgements WHERE id = ANY(%s)", ([r[0] for r in rows],)
                )
                return PrunedBatch(deleted.rowcount, reasons.rowcount, labels.rowcount, audited.rowcount)

        return await self._run(prune)

    async def prune_claims(self, before: datetime) -> int:
        async def prune(conn: psycopg.AsyncConnection[Any]) -> int:
            async with conn.transaction():
                return (await conn.execute(retention.claims_sql("%s"), (before.timestamp(),))).rowcount

        return await self._run(prune)

    async def prune_groups(self, closed_for_s: float) -> int:
        async def prune(conn: psycopg.AsyncConnection[Any]) -> int:
            async with conn.transaction():
                # members go with their group (ON DELETE CASCADE)
                return (await conn.execute(_GROUPS.prune_groups, (closed_for_s,))).rowcount

        return await self._run(prune)

    # ------------------------------------------------------------------ reads

    async def get(self, judgement_id: str) -> StoredJudgement | None:
        async def select(conn: psycopg.AsyncConnection[Any]) -> StoredJudgement | None:
            found = await (
                await conn.execute("SELECT doc FROM judgements WHERE judgement_id = %s", (judgement_id,))
            ).fetchone()
            return None if found is None else codec.load_judgement(found[0])

        return await self._run(select)

    async def get_by_idempotency_key(self, key: str) -> KeyedJudgement | None:
        async def select(conn: psycopg.AsyncConnection[Any]) -> KeyedJudgement | None:
            found = await (
                await conn.execute(
                    "SELECT doc, request_hash FROM judgements WHERE idempotency_key = %s", (key,)
                )
            ).fetchone()
            if found is None:
                return None
            return KeyedJudgement(judgement=codec.load_judgement(found[0]), request_hash=found[1])

        return await self._run(select)

    async def list_runs(self, *, limit: int = 50, cursor: str | None = None) -> RunPage:
        return await self._runs(limit=limit, cursor=cursor or "", one=False)

    async def run_summary(self, run_id: str) -> RunSummary | None:
        page = await self._runs(limit=1, cursor=run_id, one=True)
        return page.items[0] if page.items else None

    async def _runs(self, *, limit: int, cursor: str, one: bool) -> RunPage:
        async def select(conn: psycopg.AsyncConnection[Any]) -> RunPage:
            sql = run_views.runs_sql("%s", one=one)
            rows = await (await conn.execute(sql, (cursor, limit + 1))).fetchall()
            ids = [r[0] for r in rows[:limit]]
            if not ids:
                return run_views.run_page(rows, [], [], limit)
            fingerprints_sql, last_step_sql = run_views.run_details_sql("%s", len(ids))
            fingerprints = await (await conn.execute(fingerprints_sql, ids)).fetchall()
            last_steps = await (await conn.execute(last_step_sql, ids)).fetchall()
            return run_views.run_page(rows, fingerprints, last_steps, limit)

        return await self._run(select)

    async def run_steps(
        self,
        run_id: str,
        *,
        after: int = -1,
        until: int | None = None,
        fingerprint: str | None = None,
        limit: int = 1000,
    ) -> RunSteps:
        sql = run_views.steps_sql("%s", fingerprint=fingerprint is not None, until=until is not None)
        params = run_views.steps_params(run_id, after, until, fingerprint, limit)

        async def select(conn: psycopg.AsyncConnection[Any]) -> RunSteps:
            return run_views.run_steps(run_id, await (await conn.execute(sql, params)).fetchall(), limit)

        return await self._run(select)

    async def save_labels(self, labels: HumanLabels, *, run_id: str | None) -> None:
        row = run_views.labels_row(labels, run_id)

        async def save(conn: psycopg.AsyncConnection[Any]) -> None:
            async with conn.transaction():
                await conn.execute(run_views.upsert_labels_sql("%s"), row)

        await self._run(save)

    async def labels_of(self, judgement_id: str) -> list[HumanLabels]:
        sql = run_views.labels_of_sql("%s")

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[HumanLabels]:
            rows = await (await conn.execute(sql, (judgement_id,))).fetchall()
            return run_views.labels_from(doc for (doc,) in rows)

        return await self._run(select)

    async def run_labels(self, run_id: str, *, limit: int = 10_000) -> list[HumanLabels]:
        sql = run_views.run_labels_sql("%s")

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[HumanLabels]:
            rows = await (await conn.execute(sql, (run_id, limit))).fetchall()
            return run_views.labels_from(doc for (doc,) in rows)

        return await self._run(select)

    async def save_audit(self, record: AuditRecord) -> None:
        row = audits.insert_row(record)

        async def save(conn: psycopg.AsyncConnection[Any]) -> None:
            async with conn.transaction():
                await conn.execute(audits.insert_sql("%s"), row)

        await self._run(save)

    async def run_divergence(
        self, run_id: str, *, limit: int = audits.MAX_AUDITS_READ
    ) -> list[GroupDivergence]:
        sql = audits.figures_sql("%s")

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[GroupDivergence]:
            rows = await (await conn.execute(sql, (run_id, limit))).fetchall()
            return await asyncio.to_thread(audits.figures_of, rows)  # up to 20,000 rows: off the loop

        return await self._run(select)

    async def audit_of(self, judgement_id: str) -> AuditRecord | None:
        sql = audits.record_sql("%s")

        async def select(conn: psycopg.AsyncConnection[Any]) -> AuditRecord | None:
            row = await (await conn.execute(sql, (judgement_id,))).fetchone()
            return None if row is None else audits.load(row[0])

        return await self._run(select)

    async def save_explained(self, judgement_id: str, reasons: ExplainedReasons) -> ExplainedReasons:
        async def save(conn: psycopg.AsyncConnection[Any]) -> ExplainedReasons:
            async with conn.transaction():
                await conn.execute(explained.insert_sql("%s"), explained.insert_row(judgement_id, reasons))
                row = await (await conn.execute(explained.select_sql("%s"), (judgement_id,))).fetchone()
            assert row is not None  # inserted, or there before, in this transaction
            return explained.load(row[0])

        return await self._run(save)

    async def explained_of(self, judgement_id: str) -> ExplainedReasons | None:
        sql = explained.select_sql("%s")

        async def select(conn: psycopg.AsyncConnection[Any]) -> ExplainedReasons | None:
            row = await (await conn.execute(sql, (judgement_id,))).fetchone()
            return None if row is None else explained.load(row[0])

        return await self._run(select)

    async def save_rubric(self, rubric: Rubric) -> Rubric:
        async def save(conn: psycopg.AsyncConnection[Any]) -> Rubric:
            async with conn.transaction():
                await conn.execute(rubrics.insert_sql("%s"), rubrics.insert_row(rubric))
                sql = rubrics.select_version_sql("%s")
                row = await (await conn.execute(sql, (rubric.id, rubric.version))).fetchone()
            assert row is not None  # inserted, or there before, in this transaction
            return rubrics.load(row[0])

        return await self._run(save)

    async def ping(self) -> None:
        async def select(conn: psycopg.AsyncConnection[Any]) -> None:
            await (await conn.execute("SELECT 1")).fetchone()

        await self._run(select)

    async def rubric(self, rubric_id: str, version: int | None = None) -> Rubric | None:
        params: tuple[object, ...] = (rubric_id,)
        if version is None:
            sql = rubrics.select_latest_sql("%s")
        else:
            sql, params = rubrics.select_version_sql("%s"), (rubric_id, version)

        async def select(conn: psycopg.AsyncConnection[Any]) -> Rubric | None:
            row = await (await conn.execute(sql, params)).fetchone()
            return None if row is None else rubrics.load(row[0])

        return await self._run(select)

    async def regrades_of(self, judgement_ids: list[str]) -> list[StoredJudgement]:
        if not judgement_ids:
            return []
        sql = run_views.regrades_of_sql("%s", len(judgement_ids))

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[StoredJudgement]:
            rows = await (await conn.execute(sql, judgement_ids)).fetchall()
            return [codec.load_judgement(doc) for (doc,) in rows]

        return await self._run(select)

    async def list_run(
        self, run_id: str, *, step: int | None = None, limit: int = 100, cursor: str | None = None
    ) -> JudgementPage:
        sql, params = run_views.run_judgements_query("%s", run_id, step=step, limit=limit, cursor=cursor)

        async def select(conn: psycopg.AsyncConnection[Any]) -> JudgementPage:
            return run_views.judgement_page(await (await conn.execute(sql, params)).fetchall(), limit)

        return await self._run(select)


async def _member_group(
    conn: psycopg.AsyncConnection[Any], group_key: str, *, lock: bool
) -> MemberGroup | None:
    cur = await conn.execute(_GROUPS.select_group + (" FOR UPDATE" if lock else ""), (group_key,))
    row = await cur.fetchone()
    if row is None:
        return None
    members = await (await conn.execute(_GROUPS.select_members, (group_key,))).fetchall()
    return member_groups.member_group(row, members)


async def _applied(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    rows = await (await conn.execute("SELECT name FROM schema_migrations ORDER BY name")).fetchall()
    return [str(r[0]) for r in rows]


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
