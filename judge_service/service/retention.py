"""Retention: judgements older than JUDGE_RETENTION_DAYS are deleted in the background, and any range
on request (POST /v1/prune, `judge-service prune`).

A prune deletes in batches (JUDGE_PRUNE_BATCH_ROWS judgements, one short transaction each; what goes
with a judgement and what stays: store/retention.py) and yields to other work between them, so saves and
reads wait for at most one batch. One process prunes at a time across replicas (the store's prune lock):
the background job skips its turn when another holds it, and a prune asked for by hand is refused 409.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

from judge_service.errors import ConflictError
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import PruneReport
from judge_service.store.base import JudgementStore

log = logging.getLogger(__name__)


class Retention:
    def __init__(
        self,
        store: JudgementStore,
        metrics: JudgeMetrics,
        *,
        days: float | None,
        interval_s: float,
        batch_rows: int,
        pause_s: float,
    ) -> None:
        self._store = store
        self._metrics = metrics
        self.days = days
        self._interval_s = interval_s
        self._batch_rows = batch_rows
        self._pause_s = pause_s

    async def prune(
        self,
        before: datetime,
        *,
        run_id: str | None = None,
        include_labelled: bool = False,
        max_judgements: int | None = None,
    ) -> PruneReport:
        """Delete judgements created before `before` (of one run), batch by batch, up to
        `max_judgements` (then `more` is true: call again); ConflictError while another prune runs."""
        started = time.perf_counter()
        counts = {"judgements": 0, "explained_reasons": 0, "labels": 0, "audits": 0, "claims": 0}
        more = False
        async with self._store.prune_lock() as held:
            if not held:
                raise ConflictError(
                    "a prune is already running (on this or another replica); try again when it is done"
                )
            if run_id is None:
                counts["claims"] = await self._store.prune_claims(before)
            while True:
                room = self._batch_rows if max_judgements is None else max_judgements - counts["judgements"]
                if room <= 0:
                    more = True
                    break
                batch = await self._store.prune_judgements(
                    before,
                    run_id=run_id,
                    include_labelled=include_labelled,
                    limit=min(room, self._batch_rows),
                )
                counts["judgements"] += batch.judgements
                counts["explained_reasons"] += batch.explained_reasons
                counts["labels"] += batch.labels
                counts["audits"] += batch.audits
                if batch.judgements < min(room, self._batch_rows):
                    break
                await asyncio.sleep(self._pause_s)  # let saves and reads waiting on the store through
        for what, count in counts.items():
            self._metrics.pruned.labels(what=what).inc(count)
        report = PruneReport(
            before=before,
            run_id=run_id,
            seconds=round(time.perf_counter() - started, 3),
            more=more,
            **counts,
        )
        if report.judgements or report.claims:
            log.info(
                "pruned %d judgements (%d explained reasons, %d labels) created before %s%s, and %d "
                "lapsed claims, in %.1f s",
                report.judgements,
                report.explained_reasons,
                report.labels,
                before.isoformat(),
                f" of run {run_id}" if run_id else "",
                report.claims,
                report.seconds,
            )
        return report

    async def keep(self) -> None:
        """The background job: every interval, prune what JUDGE_RETENTION_DAYS no longer keeps. Runs until
        cancelled; a failed round is logged and tried again at the next."""
        if self.days is None:
            return
        while True:
            try:
                await self.prune(datetime.now(UTC) - timedelta(days=self.days))
            except ConflictError:
                log.debug("retention: another process is pruning; skipped this round")
            except Exception:
                log.exception("retention: the prune failed; trying again in %.0f s", self._interval_s)
            await asyncio.sleep(self._interval_s)
