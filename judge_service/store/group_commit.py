"""Group commit, shared by every store: saves that arrive while a batch is being written are queued and
written together in the next transaction, one commit for all of them (up to `max_rows`). A lone save is
written at once, so nothing waits for a batch to fill. Each save returns only after its own transaction
committed, with its own outcome: the store's `write` reports an error per row (a constraint one row
broke) or raises for the whole batch (the transaction failed: every save in it fails).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from judge_service.schemas import StoredJudgement
from judge_service.store import codec
from judge_service.store.base import IdempotencyKey

MAX_ROWS_PER_COMMIT = 256  # bounds one transaction, and so the extra wait of the first save in it


@dataclass
class PendingSave:
    judgement_id: str
    idempotency: IdempotencyKey | None
    row: tuple[object, ...]  # the judgements columns, in codec.ROW_COLUMNS order
    done: asyncio.Future[None]


WriteBatch = Callable[[Sequence[PendingSave]], Awaitable[list[Exception | None]]]


class GroupCommit:
    def __init__(self, write: WriteBatch, *, max_rows: int = MAX_ROWS_PER_COMMIT) -> None:
        self._write = write
        self._max_rows = max_rows
        self._pending: list[PendingSave] = []  # only touched on the event loop
        self._writer: asyncio.Task[None] | None = None

    async def save(self, judgement: StoredJudgement, idempotency: IdempotencyKey | None) -> None:
        """Queue one judgement and return once its transaction committed (or raise its error)."""
        pending = PendingSave(
            judgement.judgement_id,
            idempotency,
            codec.row(judgement, idempotency),
            asyncio.get_running_loop().create_future(),
        )
        self._pending.append(pending)
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_pending())
        await pending.done

    async def flush(self) -> None:
        """Return once every save accepted so far is written (close() calls it first)."""
        while self._writer is not None:
            await asyncio.shield(self._writer)

    async def _write_pending(self) -> None:
        try:
            while self._pending:
                batch = self._pending[: self._max_rows]
                del self._pending[: self._max_rows]
                try:
                    errors = await self._write(batch)
                except Exception as exc:  # the transaction failed as a whole: every save in it fails
                    errors = [exc] * len(batch)
                except BaseException:  # cancelled (loop shutdown): nobody may be left waiting
                    for pending in batch + self._pending:
                        pending.done.cancel()
                    self._pending.clear()
                    raise
                for pending, error in zip(batch, errors, strict=True):
                    _settle(pending, error)
        finally:
            self._writer = None


def _settle(pending: PendingSave, error: Exception | None) -> None:
    if pending.done.done():  # the caller was cancelled; the row is written (or not) all the same
        return
    if error is None:
        pending.done.set_result(None)
    else:
        pending.done.set_exception(error)
