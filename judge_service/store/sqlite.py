"""Embedded SQLite store of judgements.

Every call runs on one dedicated worker thread: the event loop never blocks on disk, and the
connection is only ever touched by the thread that created it. The connection is in autocommit
mode with explicit transactions, WAL and synchronous=FULL, so once `save()` returns the row is
on disk and survives the process being killed right after.

Group commit (store/group_commit.py): saves that arrive while a write is on the disk share the next
transaction, one fsync for all of them. A row that breaks a constraint fails only its own save: SQLite
backs out just the failing statement and the transaction carries on with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TypeVar

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
from judge_service.store.migrations import SQLITE, Migration
from judge_service.store.retention import PrunedBatch

__all__ = ["SqliteJudgementStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5_000

_INSERT = (
    f"INSERT INTO judgements ({codec.ROW_COLUMNS}) VALUES ({', '.join('?' * codec.ROW_WIDTH)})"
    # A taken key inserts nothing (rowcount 0) instead of raising: no error text to parse.
    " ON CONFLICT (idempotency_key) DO NOTHING"
)


# Seconds since the epoch on the database's clock (idempotency claims' leases).
_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
_CLAIM = (
    "INSERT INTO idempotency_claims (idempotency_key, request_hash, owner, lease_until)"
    f" VALUES (?, ?, ?, {_NOW} + ?)"
    " ON CONFLICT (idempotency_key) DO UPDATE SET request_hash = excluded.request_hash,"
    " owner = excluded.owner, lease_until = excluded.lease_until"
    f" WHERE idempotency_claims.lease_until < {_NOW} OR idempotency_claims.owner = excluded.owner"
    " RETURNING owner"
)
_RENEW = f"UPDATE idempotency_claims SET lease_until = {_NOW} + ? WHERE idempotency_key = ? AND owner = ?"
_RELEASE = "DELETE FROM idempotency_claims WHERE idempotency_key = ? AND owner = ?"
_END_CLAIM = "DELETE FROM idempotency_claims WHERE idempotency_key = ?"
_GROUPS = member_groups.MemberGroupSql.for_dialect("?", _NOW)


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (sqlite3 executes one at a time).

    `executescript` would do this, but it commits any open transaction first, which would break
    running the version check and the migration as one transaction.
    """
    buffer = ""
    for part in script.split(";"):
        buffer += part + ";"
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            buffer = ""
            if statement.strip(";").strip():
                yield statement
    if buffer.strip(";").strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:200]!r}")


@contextlib.contextmanager
def _write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE (the write lock first, so what is read inside stays true) ... COMMIT, or ROLLBACK."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _integrity_error(exc: sqlite3.IntegrityError, pending: PendingSave) -> Exception:
    """The error one save() raises for its row's constraint violation (the key is handled by ON CONFLICT,
    so the only unique column left to break is the judgement id)."""
    return ValueError(f"judgement {pending.judgement_id!r} is already stored; ids must be unique ({exc})")


class SqliteJudgementStore:
    """`JudgementStore` on a single SQLite file. Call `open()` before use and `close()` at shutdown."""

    def __init__(self, path: Path, *, max_rows_per_commit: int = MAX_ROWS_PER_COMMIT) -> None:
        self.path = Path(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgement-store")
        # Only ever read or written on the worker thread.
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._commits = GroupCommit(
            lambda batch: self._run(functools.partial(self._insert_batch, batch)),
            max_rows=max_rows_per_commit,
        )

    # ------------------------------------------------------------------ plumbing

    async def _run(self, fn: Callable[[], T], *, opening: bool = False) -> T:
        if self._closed:
            raise RuntimeError("the judgement store is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except sqlite3.OperationalError as exc:  # disk full or failing, locked past the busy timeout
            if opening:  # a start-up failure (a migration, a path) says what it is
                raise
            log.warning("judgement database %s: %s", self.path, exc)
            raise StoreUnavailableError(f"the judgement database could not be used ({exc})") from exc

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(
                "the judgement store is closed" if self._closed else "the judgement store is not open"
            )
        return self._conn

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Create or migrate the database; calling it again is a no-op."""
        await self._run(self._open_sync, opening=True)

    def _open_sync(self) -> None:
        if self._conn is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: no implicit transactions; we BEGIN explicitly where needed.
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                # Still durable with synchronous=FULL, just slower and with readers blocking writers.
                log.warning("SQLite at %s refused WAL mode (got %r); continuing", self.path, mode)
            conn.execute("PRAGMA synchronous = FULL")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Apply the pending named migrations, one transaction each (store/migrations.py)."""
        where = str(self.path)
        while True:
            # IMMEDIATE takes the write lock before reading what is applied, so two processes opening
            # the same file at once cannot both apply the same migration.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(migrations.MIGRATIONS_TABLE_SQL[SQLITE])
                applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
                if not applied:  # a database from before names were recorded, or a new one
                    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                    applied = migrations.adopted_names(version, migrations.MIGRATIONS, where=where)
                    for name in applied:
                        self._record(conn, name)
                todo = migrations.pending(applied, migrations.MIGRATIONS, where=where)
                if todo:
                    self._apply(conn, todo[0])
                    conn.execute(f"PRAGMA user_version = {len(applied) + 1}")
                conn.execute("COMMIT")
                if not todo:
                    return
                log.info("judgement database %s: applied migration %s", self.path, todo[0].name)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @staticmethod
    def _apply(conn: sqlite3.Connection, migration: Migration) -> None:
        for statement in _statements(migration.script(SQLITE)):
            conn.execute(statement)
        SqliteJudgementStore._record(conn, migration.name)

    @staticmethod
    def _record(conn: sqlite3.Connection, name: str) -> None:
        conn.execute(
            "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
            (name, codec.now_text()),
        )

    async def close(self) -> None:
        """Close the connection and stop the worker; later calls raise RuntimeError. Idempotent."""
        if self._closed:
            return
        await self._commits.flush()  # saves already accepted are written first
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            # Submitted after any call already queued, so those finish first.
            await loop.run_in_executor(self._executor, self._close_sync)
        finally:
            self._executor.shutdown(wait=False)

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ operations

    async def save(self, judgement: StoredJudgement, *, idempotency: IdempotencyKey | None = None) -> None:
        """Write one judgement and commit it durably; ValueError if its id is already stored,
        IdempotencyKeyTaken if another judgement holds its idempotency key."""
        if self._closed:
            raise RuntimeError("the judgement store is closed")
        await self._commits.save(judgement, idempotency)

    def _insert_batch(self, batch: Sequence[PendingSave]) -> list[Exception | None]:
        conn = self._connection()
        errors: list[Exception | None] = []
        with _write_transaction(conn):
            for pending in batch:
                try:
                    inserted = conn.execute(_INSERT, pending.row).rowcount
                except sqlite3.IntegrityError as exc:  # only this statement is backed out
                    errors.append(_integrity_error(exc, pending))
                    continue
                if pending.idempotency is None:
                    errors.append(None)
                elif inserted == 0:
                    errors.append(IdempotencyKeyTaken(pending.idempotency.key))
                else:  # the key is settled: no claim on it outlives its judgement
                    conn.execute(_END_CLAIM, (pending.idempotency.key,))
                    errors.append(None)
        return errors

    async def get(self, judgement_id: str) -> StoredJudgement | None:
        def select() -> StoredJudgement | None:
            found = (
                self._connection()
                .execute("SELECT doc FROM judgements WHERE judgement_id = ?", (judgement_id,))
                .fetchone()
            )
            return None if found is None else codec.load_judgement(found[0])

        return await self._run(select)

    async def get_by_idempotency_key(self, key: str) -> KeyedJudgement | None:
        def select() -> KeyedJudgement | None:
            found = (
                self._connection()
                .execute("SELECT doc, request_hash FROM judgements WHERE idempotency_key = ?", (key,))
                .fetchone()
            )
            if found is None:
                return None
            return KeyedJudgement(judgement=codec.load_judgement(found[0]), request_hash=found[1])

        return await self._run(select)

    async def claim(self, idempotency: IdempotencyKey, *, owner: str, lease_s: float) -> Claim:
        def claim() -> Claim:
            conn = self._connection()
            with _write_transaction(conn):
                row = conn.execute(
                    _CLAIM, (idempotency.key, idempotency.request_hash, owner, lease_s)
                ).fetchone()
                if row is not None:
                    return Claim(owned=True, request_hash=idempotency.request_hash)
                held = conn.execute(
                    "SELECT request_hash FROM idempotency_claims WHERE idempotency_key = ?",
                    (idempotency.key,),
                ).fetchone()
                return Claim(owned=False, request_hash=held[0])  # the write lock keeps the row

        return await self._run(claim)

    async def renew(self, key: str, *, owner: str, lease_s: float) -> bool:
        def renew() -> bool:
            return self._connection().execute(_RENEW, (lease_s, key, owner)).rowcount == 1

        return await self._run(renew)

    async def release(self, key: str, *, owner: str) -> None:
        def release() -> None:
            self._connection().execute(_RELEASE, (key, owner))

        await self._run(release)

    async def join_group(self, join: MemberJoin) -> MemberGroup:
        def join_group() -> MemberGroup:
            conn = self._connection()
            with _write_transaction(conn):  # the write lock orders joins: no two close one group
                conn.execute(_GROUPS.open_group, member_groups.open_params(join))
                group = self._member_group(conn, join.group_key)
                if group is None:  # inserted or present, under the write lock
                    raise RuntimeError(f"member group {join.group_key!r} vanished inside its transaction")
                group, added = member_groups.join(group, join)
                if added:
                    conn.execute(_GROUPS.add_member, (join.group_key, join.answer_id, join.text))
                if group.closed_now:
                    conn.execute(_GROUPS.close_group, (join.group_key,))
                return group

        return await self._run(join_group)

    @staticmethod
    def _member_group(conn: sqlite3.Connection, group_key: str) -> MemberGroup | None:
        row = conn.execute(_GROUPS.select_group, (group_key,)).fetchone()
        if row is None:
            return None
        return member_groups.member_group(row, conn.execute(_GROUPS.select_members, (group_key,)).fetchall())

    async def member_group(self, group_key: str) -> MemberGroup | None:
        return await self._run(lambda: self._member_group(self._connection(), group_key))

    async def close_group(self, group_key: str) -> MemberGroup | None:
        def close() -> MemberGroup | None:
            conn = self._connection()
            with _write_transaction(conn):
                closed_now = conn.execute(_GROUPS.close_group, (group_key,)).rowcount == 1
                group = self._member_group(conn, group_key)
                return None if group is None else replace(group, closed_now=closed_now)

        return await self._run(close)

    @contextlib.asynccontextmanager
    async def prune_lock(self) -> AsyncIterator[bool]:
        # A lock file beside the database, which the worker processes of a replica share.
        path = f"{self.path}.prune-lock"
        fd = await self._run(lambda: os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True  # the lock goes with the descriptor
        finally:
            os.close(fd)

    async def prune_judgements(
        self,
        before: datetime,
        *,
        run_id: str | None = None,
        include_labelled: bool = False,
        limit: int = 1000,
    ) -> PrunedBatch:
        select = retention.oldest_sql("?", run=run_id is not None, include_labelled=include_labelled)
        params = retention.oldest_params(before, run_id, limit)

        def prune() -> PrunedBatch:
            conn = self._connection()
            with _write_transaction(conn):
                rows = conn.execute(select, params).fetchall()
                if not rows:
                    return PrunedBatch()
                ids = [r[1] for r in rows]
                marks = ", ".join("?" * len(rows))
                reasons = conn.execute(f"DELETE FROM explained_reasons WHERE judgement_id IN ({marks})", ids)
                labels = conn.execute(f"DELETE FROM human_labels WHERE judgement_id IN ({marks})", ids)
                audited = conn.execute(f"DELETE FROM audits WHERE judgement_id IN ({marks})", ids)
                deleted = conn.execute(f"DELETE FROM judgements WHERE id IN ({marks})", [r[0] for r in rows])
                return PrunedBatch(deleted.rowcount, reasons.rowcount, labels.rowcount, audited.rowcount)

        return await self._run(prune)

    async def prune_claims(self, before: datetime) -> int:
        def prune() -> int:
            conn = self._connection()
            with _write_transaction(conn):
                return conn.execute(retention.claims_sql("?"), (before.timestamp(),)).rowcount

        return await self._run(prune)

    async def prune_groups(self, closed_for_s: float) -> int:
        def prune() -> int:
            conn = self._connection()
            with _write_transaction(conn):
                conn.execute(_GROUPS.prune_members, (closed_for_s,))
                return conn.execute(_GROUPS.prune_groups, (closed_for_s,)).rowcount

        return await self._run(prune)

    async def list_runs(self, *, limit: int = 50, cursor: str | None = None) -> RunPage:
        return await self._runs(limit=limit, cursor=cursor or "", one=False)

    async def run_summary(self, run_id: str) -> RunSummary | None:
        page = await self._runs(limit=1, cursor=run_id, one=True)
        return page.items[0] if page.items else None

    async def _runs(self, *, limit: int, cursor: str, one: bool) -> RunPage:
        def select() -> RunPage:
            conn = self._connection()
            rows = conn.execute(run_views.runs_sql("?", one=one), (cursor, limit + 1)).fetchall()
            ids = [r[0] for r in rows[:limit]]
            if not ids:
                return run_views.run_page(rows, [], [], limit)
            fingerprints_sql, last_step_sql = run_views.run_details_sql("?", len(ids))
            fingerprints = conn.execute(fingerprints_sql, ids).fetchall()
            last_steps = conn.execute(last_step_sql, ids).fetchall()
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
        sql = run_views.steps_sql("?", fingerprint=fingerprint is not None, until=until is not None)
        params = run_views.steps_params(run_id, after, until, fingerprint, limit)

        def select() -> RunSteps:
            return run_views.run_steps(run_id, self._connection().execute(sql, params).fetchall(), limit)

        return await self._run(select)

    async def save_labels(self, labels: HumanLabels, *, run_id: str | None) -> None:
        row = run_views.labels_row(labels, run_id)

        def save() -> None:
            conn = self._connection()
            with _write_transaction(conn):
                conn.execute(run_views.upsert_labels_sql("?"), row)

        await self._run(save)

    async def labels_of(self, judgement_id: str) -> list[HumanLabels]:
        sql = run_views.labels_of_sql("?")
        rows = await self._run(lambda: self._connection().execute(sql, (judgement_id,)).fetchall())
        return run_views.labels_from(doc for (doc,) in rows)

    async def run_labels(self, run_id: str, *, limit: int = 10_000) -> list[HumanLabels]:
        sql = run_views.run_labels_sql("?")
        rows = await self._run(lambda: self._connection().execute(sql, (run_id, limit)).fetchall())
        return run_views.labels_from(doc for (doc,) in rows)

    async def save_explained(self, judgement_id: str, reasons: ExplainedReasons) -> ExplainedReasons:
        def save() -> ExplainedReasons:
            conn = self._connection()
            with _write_transaction(conn):
                conn.execute(explained.insert_sql("?"), explained.insert_row(judgement_id, reasons))
                (doc,) = conn.execute(explained.select_sql("?"), (judgement_id,)).fetchone()
            return explained.load(doc)

        return await self._run(save)

    async def explained_of(self, judgement_id: str) -> ExplainedReasons | None:
        sql = explained.select_sql("?")
        row = await self._run(lambda: self._connection().execute(sql, (judgement_id,)).fetchone())
        return None if row is None else explained.load(row[0])

    async def save_audit(self, record: AuditRecord) -> None:
        row = audits.insert_row(record)

        def save() -> None:
            conn = self._connection()
            with _write_transaction(conn):
                conn.execute(audits.insert_sql("?"), row)

        await self._run(save)

    async def run_divergence(
        self, run_id: str, *, limit: int = audits.MAX_AUDITS_READ
    ) -> list[GroupDivergence]:
        sql = audits.figures_sql("?")
        return await self._run(
            lambda: audits.figures_of(self._connection().execute(sql, (run_id, limit)).fetchall())
        )

    async def audit_of(self, judgement_id: str) -> AuditRecord | None:
        sql = audits.record_sql("?")
        row = await self._run(lambda: self._connection().execute(sql, (judgement_id,)).fetchone())
        return None if row is None else audits.load(row[0])

    async def save_rubric(self, rubric: Rubric) -> Rubric:
        def save() -> Rubric:
            conn = self._connection()
            with _write_transaction(conn):
                conn.execute(rubrics.insert_sql("?"), rubrics.insert_row(rubric))
                sql = rubrics.select_version_sql("?")
                (doc,) = conn.execute(sql, (rubric.id, rubric.version)).fetchone()
            return rubrics.load(doc)

        return await self._run(save)

    async def ping(self) -> None:
        await self._run(lambda: self._connection().execute("SELECT 1").fetchone())

    async def rubric(self, rubric_id: str, version: int | None = None) -> Rubric | None:
        params: tuple[object, ...] = (rubric_id,)
        if version is None:
            sql = rubrics.select_latest_sql("?")
        else:
            sql, params = rubrics.select_version_sql("?"), (rubric_id, version)
        row = await self._run(lambda: self._connection().execute(sql, params).fetchone())
        return None if row is None else rubrics.load(row[0])

    async def regrades_of(self, judgement_ids: list[str]) -> list[StoredJudgement]:
        if not judgement_ids:
            return []
        sql = run_views.regrades_of_sql("?", len(judgement_ids))
        rows = await self._run(lambda: self._connection().execute(sql, judgement_ids).fetchall())
        return [codec.load_judgement(doc) for (doc,) in rows]

    async def list_run(
        self, run_id: str, *, step: int | None = None, limit: int = 100, cursor: str | None = None
    ) -> JudgementPage:
        sql, params = run_views.run_judgements_query("?", run_id, step=step, limit=limit, cursor=cursor)
        return await self._run(
            lambda: run_views.judgement_page(self._connection().execute(sql, params).fetchall(), limit)
        )
