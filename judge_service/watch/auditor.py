"""The audit judge at work: a share of each run's groups re-judged in the background (JUDGE_AUDIT).

The request path only offers a stored judgement (`offer`: a draw and a put, no await): the reward was
computed and stored before, and nothing here can delay or change it. Drawn groups wait in a bounded
backlog; one drawn while it is full is dropped and counted, never queued without end. Workers
(JUDGE_AUDIT_CONCURRENCY) take groups from it one at a time, and start one only while the training
judge has a free admission slot and its engine is awake (not asleep for a trainer sharing its GPUs),
so the audit yields to training traffic rather than queueing beside it; under sustained full load the
audit falls behind and drops what it cannot keep up with, which the metrics show.

Each audited group's figures are stored (store/audits.py) and fed to this replica's onset detector for
its run, seeded from the store the first time a run is seen here (after a restart, or a run another
replica audited before); when the detector fires, judge_audit_divergence_onset_step{run_id} names the
run and the step, which the JudgeAuditDivergence alert reads. Detectors are kept for the RUNS_WATCHED runs
audited most recently here, and, apart, for RUNS_FIRED runs whose detector fired (their gauges stay
whatever other runs come); GET /v1/runs/{id}/steps computes the onset from every stored audit instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime

from judge_service.judging.base import Group
from judge_service.metrics import JudgeMetrics
from judge_service.quality.divergence import group_divergence
from judge_service.quality.onset import DivergenceDetector
from judge_service.schemas import AuditedAnswer, AuditRecord, JudgeRequest, StoredJudgement
from judge_service.store.base import JudgementStore
from judge_service.watch.audit import StepSampler, answer_scores, grade_scores
from judge_service.watch.audit_judge import AuditJudge

log = logging.getLogger(__name__)

RUNS_WATCHED = 64  # runs whose onset detector this replica keeps while it has not fired
RUNS_FIRED = 256  # runs whose detector fired, kept (with their gauge) apart from the others
YIELD_S = 0.05  # how often a worker looks again while the training judge has no free slot


class Auditor:
    def __init__(
        self,
        audit: AuditJudge,
        store: JudgementStore,
        metrics: JudgeMetrics,
        *,
        rate: float,
        backlog: int,
        concurrency: int,
        busy: Callable[[], bool],
        on_stored: Callable[[str], None] = lambda run_id: None,
    ) -> None:
        self._on_stored = on_stored
        self._audit = audit
        self._store = store
        self._metrics = metrics
        self._sampler = StepSampler(rate)
        self._backlog: asyncio.Queue[StoredJudgement] = asyncio.Queue(maxsize=backlog)
        self._concurrency = concurrency
        self._busy = busy
        self._detectors: OrderedDict[str, DivergenceDetector] = OrderedDict()
        # Fired runs are kept apart, so that other runs (a caller's many small ones) cannot push a run's
        # alert out: its gauge goes only when RUNS_FIRED later runs have fired too.
        self._fired: OrderedDict[str, DivergenceDetector] = OrderedDict()
        self._workers: list[asyncio.Task[None]] = []

    @property
    def name(self) -> str:
        return self._audit.name

    def offer(self, judgement: StoredJudgement) -> None:
        """A judgement just stored: audited if the sample draws it (module docstring). Never blocks."""
        run_id, step = judgement.run_id, judgement.step
        if run_id is None or step is None or judgement.regrade_of is not None or judgement.status == "failed":
            return  # no run step to chart, a regrade (not training), or nothing scored to compare
        if judgement.judge_model is None:
            return  # rule or code graders alone: no judge to audit (and a cheap way to fill the backlog)
        if any(a.score is not None and a.score > 1 for a in judgement.answers):
            return  # a blend whose weights sum past 1: its scores are on another scale than the audit's
        if not self._sampler.draw(run_id, step):
            return
        try:
            self._backlog.put_nowait(judgement)
        except asyncio.QueueFull:
            self._metrics.audit_groups.labels(outcome="dropped").inc()
            return
        self._metrics.audit_backlog.set(self._backlog.qsize())

    def start(self) -> None:
        self._workers = [asyncio.create_task(self._work()) for _ in range(self._concurrency)]

    async def close(self) -> None:
        """Stop: a group being audited is abandoned, and it and the backlog count as dropped."""
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        self._metrics.audit_groups.labels(outcome="dropped").inc(self._backlog.qsize())
        while not self._backlog.empty():
            self._backlog.get_nowait()
        self._metrics.audit_backlog.set(0)

    async def _work(self) -> None:
        while True:
            judgement = await self._backlog.get()
            self._metrics.audit_backlog.set(self._backlog.qsize())
            try:
                # A poll, not an event: an event set and cleared by every slot taken and given back would
                # cost every training group something; a look every 50 ms costs them nothing.
                while self._busy():  # noqa: ASYNC110
                    await asyncio.sleep(YIELD_S)
                await self._audit_one(judgement)
            except asyncio.CancelledError:
                self._metrics.audit_groups.labels(outcome="dropped").inc()
                raise
            except Exception as exc:  # one group's audit failing must not stop the audit
                self._metrics.audit_groups.labels(outcome="failed").inc()
                log.warning("audit of judgement %s failed: %s", judgement.judgement_id, exc)

    async def _audit_one(self, judgement: StoredJudgement) -> None:
        assert judgement.run_id is not None and judgement.step is not None  # offer() admits no other
        judge = self._audit.judge
        request = audit_request(judgement.request)
        started = time.perf_counter()
        graded = await judge.grade(
            Group.of(request, f"{judgement.judgement_id}-audit"), judge.options(request)
        )
        training = {a.id: answer_scores(a) for a in judgement.answers}
        audit = {i: grade_scores(g.score, g.criteria) for i, g in graded.grades.items() if i in training}
        figures = group_divergence(judgement.step, training, audit)
        record = AuditRecord(
            judgement_id=judgement.judgement_id,
            run_id=judgement.run_id,
            step=judgement.step,
            created_at=datetime.now(UTC),
            judge=self._audit.name,
            model=judge.model_name,
            prompt_version=None if graded.run is None else graded.run.prompt_version,
            answers=[
                AuditedAnswer(id=i, training=training[i].score, audit=audit[i].score if i in audit else None)
                for i in training
            ],
            rank_correlation=figures.rank_correlation,
            gap=figures.gap,
            criterion_gaps=dict(figures.criterion_gaps),
            best_differs=figures.best_differs,
        )
        await self._store.save_audit(record)
        self._on_stored(record.run_id)
        self._metrics.audit_groups.labels(outcome="audited").inc()
        self._metrics.audit_seconds.observe(time.perf_counter() - started)
        await self._watch(record)

    async def _watch(self, record: AuditRecord) -> None:
        """Feed the run's onset detector; seed it from the store (this record among them) at first sight.
        Fed as audits complete, which is step order but for audits completing out of turn: the gauge may
        then name a step or two off what GET /v1/runs/{id}/steps (step order) names."""
        if record.run_id in self._fired:
            return  # found already: the gauge stands
        detector = self._detectors.pop(record.run_id, None)
        if detector is None:
            detector = DivergenceDetector()
            for stored in await self._store.run_divergence(record.run_id):
                detector.add(stored.step, stored.gap, stored.rank_correlation)
        else:
            detector.add(record.step, record.gap, record.rank_correlation)
        onset = detector.onset
        if onset.detected_at is None:
            self._detectors[record.run_id] = detector
            if len(self._detectors) > RUNS_WATCHED:
                self._detectors.popitem(last=False)  # not fired: no gauge to take away
            return
        self._fired[record.run_id] = detector
        if len(self._fired) > RUNS_FIRED:
            forgotten, _ = self._fired.popitem(last=False)
            with contextlib.suppress(KeyError):
                self._metrics.audit_divergence.remove(forgotten)
        began = onset.began_at if onset.began_at is not None else onset.detected_at
        self._metrics.audit_divergence.labels(run_id=record.run_id).set(began)


def audit_request(request: JudgeRequest) -> JudgeRequest:
    """What the audit judge is asked: the group and its criteria, under the audit judge's own settings
    (decoding, reasons, orders), with no grader, blend, cascade, canary or rubric of the training side."""
    return JudgeRequest(
        conversation=request.conversation,
        reference=request.reference,
        answers=request.answers,
        tools=request.tools,
        criteria=request.criteria,
        run_id=request.run_id,
        step=request.step,
        seed=request.seed,
        canaries="off",
    )
