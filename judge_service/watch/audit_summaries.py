"""A run's audit figures for GET /v1/runs/{id}/steps and the run page, read at most once per
SUMMARY_TTL_S per run on this replica, however many ask.

Reading a long run's audited groups is the store's work (up to MAX_AUDITS_READ rows, about half a second
on SQLite, whose one thread also writes every judgement) and the summary's (the onset detector over them,
off the event loop). A reader who asks again and again, or many at once, must not hold up the rewards'
writes: concurrent asks share one read, and the result serves every ask for SUMMARY_TTL_S, or until
this replica stores another audit of the run (but never less than FRESH_S), so the figures lag this
replica's audits by FRESH_S at most and other replicas' by SUMMARY_TTL_S.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

from judge_service.schemas import RunAudit, StepAudit
from judge_service.store.audits import MAX_AUDITS_READ
from judge_service.store.base import JudgementStore
from judge_service.watch.audit import audit_summary

SUMMARY_TTL_S = 10.0
FRESH_S = 0.5  # a read serves this long whatever is stored meanwhile
RUNS_KEPT = 64

Summary = tuple[dict[int, StepAudit], RunAudit] | None  # None: the run has no audited group


class AuditSummaries:
    def __init__(self, store: JudgementStore, *, ttl_s: float = SUMMARY_TTL_S) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._kept: OrderedDict[str, tuple[float, asyncio.Future[Summary]]] = OrderedDict()
        self._changed: set[str] = set()  # runs with an audit stored here since their last read

    def changed(self, run_id: str) -> None:
        """An audit of the run was stored here (watch/auditor.py)."""
        if run_id in self._kept:
            self._changed.add(run_id)

    async def of(self, run_id: str) -> Summary:
        now = time.monotonic()
        kept = self._kept.get(run_id)
        stale = kept is not None and (
            now - kept[0] >= self._ttl_s or (run_id in self._changed and now - kept[0] >= FRESH_S)
        )
        if kept is None or stale:
            self._changed.discard(run_id)
            future = asyncio.ensure_future(self._read(run_id))
            future.add_done_callback(lambda done: self._forget_failed(run_id, done))
            kept = (now, future)
            self._kept[run_id] = kept
            self._kept.move_to_end(run_id)
            while len(self._kept) > RUNS_KEPT:
                forgotten, _ = self._kept.popitem(last=False)
                self._changed.discard(forgotten)
        return await asyncio.shield(kept[1])

    async def _read(self, run_id: str) -> Summary:
        audited = await self._store.run_divergence(run_id, limit=MAX_AUDITS_READ)
        if not audited:
            return None
        return await asyncio.to_thread(audit_summary, audited, limit=MAX_AUDITS_READ)

    def _forget_failed(self, run_id: str, done: asyncio.Future[Summary]) -> None:
        """A read that failed (the store away) is not served again: the next ask reads anew."""
        kept = self._kept.get(run_id)
        if kept is not None and kept[1] is done and (done.cancelled() or done.exception() is not None):
            del self._kept[run_id]
