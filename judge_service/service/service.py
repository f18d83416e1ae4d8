"""Orchestration of one group: grading plan -> graders -> store -> metrics.

Reads top to bottom: `grade` -> `_once` (idempotency) -> `_grade` (plan, canary, grade, store, observe).
What a grader does (the LLM judge's orders, admission, backend calls, parsing) lives in judging/; the
canary answers and the length-bias figure that watch a run for reward hacking, in watch/.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from judge_service.errors import JudgeServiceError, NotFoundError, StoreUnavailableError
from judge_service.judging.base import Group, ModelRun
from judge_service.judging.fingerprint import FingerprintCache
from judge_service.judging.registry import GraderRegistry
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import (
    AnswerResult,
    AuditRecord,
    BatchItem,
    ErrorBody,
    ExplainedReasons,
    GraderInfo,
    GroupStatus,
    HumanLabels,
    JudgementPage,
    JudgeRequest,
    JudgeResponse,
    RegradeItem,
    RegradeRequest,
    RegradeResponse,
    RunPage,
    RunSteps,
    RunSummary,
    StoredJudgement,
    Timings,
    Usage,
)
from judge_service.service.idempotency import GradeFn, IdempotencyGuard, ScopedKey
from judge_service.service.regrade import regraded_request
from judge_service.service.rubrics import RubricService
from judge_service.store.base import IdempotencyKey, JudgementStore, KeyedJudgement
from judge_service.watch.audit_summaries import AuditSummaries
from judge_service.watch.auditor import Auditor
from judge_service.watch.canaries import Canary, CanaryPolicy, without_canary
from judge_service.watch.canaries import result as canary_result
from judge_service.watch.length_bias import length_bias

UNSAVED_KEPT = 1_000  # judgements kept for the retry of a failed save (see _store_and_observe)


class JudgeService:
    def __init__(
        self,
        *,
        graders: GraderRegistry,
        store: JudgementStore,
        metrics: JudgeMetrics,
        idempotency_lease_s: float = 30.0,
        canaries: CanaryPolicy | None = None,
        auditor: Auditor | None = None,
        audit_summaries: AuditSummaries | None = None,
    ) -> None:
        self._graders = graders
        self._auditor = auditor
        self._audit_summaries = audit_summaries or AuditSummaries(store)
        self._canaries = canaries or CanaryPolicy()
        self._store = store
        self._metrics = metrics
        self._idempotency = IdempotencyGuard(store, metrics, lease_s=idempotency_lease_s)
        self.rubrics = RubricService(store, graders, metrics, lease_s=idempotency_lease_s)
        self._fingerprints = FingerprintCache()
        # Judgements whose save failed, by idempotency key: the retry stores them instead of judging again.
        self._unsaved: OrderedDict[str, tuple[str, StoredJudgement]] = OrderedDict()
        # Reasons being written, by judgement id: concurrent asks share one judge call (explain).
        self._explaining: dict[str, asyncio.Future[ExplainedReasons]] = {}

    def graders(self) -> list[GraderInfo]:
        """Every grader this service offers, with its kind and fingerprint."""
        return self._graders.describe()

    async def grade(
        self, request: JudgeRequest, *, idempotency_key: str | None = None, caller: str | None = None
    ) -> JudgeResponse:
        """Grade and store one group; with an idempotency key, at most once per key and caller
        (idempotency.py)."""
        return await self._once(
            request, _scoped(idempotency_key, caller), functools.partial(self._grade, caller=caller)
        )

    async def _once(self, request: JudgeRequest, key: ScopedKey | None, grade: GradeFn) -> JudgeResponse:
        """`grade` the request; at most once under `key` when there is one."""
        if key is None:
            return await grade(request)
        return await self._idempotency.once(key, request, grade)

    async def _grade(
        self,
        request: JudgeRequest,
        *,
        regrade_of: str | None = None,
        regraded: StoredJudgement | None = None,
        idempotency: IdempotencyKey | None = None,
        caller: str | None = None,
    ) -> JudgeResponse:
        if idempotency is not None:  # judged before, but its save failed: store it now
            kept = self._unsaved.pop(idempotency.key, None)
            if kept is not None and kept[0] == idempotency.request_hash:
                return await self._store_and_observe(kept[1], idempotency)
        started = time.perf_counter()
        judgement_id = uuid.uuid4().hex
        # A rubric becomes the request's criteria (written first for "generate"); a regrade keeps its items.
        request, rubric = await self.rubrics.apply(request, regraded.rubric if regraded else None)
        plan = self._graders.plan(request)  # 422 for an unknown grader
        # A regrade judges the canary its judgement had (or none); a new group may draw one.
        canary = Canary.of(regraded) if regraded else self._canaries.choose(request, judgement_id)
        group = Group.of(request, judgement_id, canary=None if canary is None else canary.answer)
        graded = await plan.grade(group)
        ran = _model_run_fields(graded.run, total_ms=(time.perf_counter() - started) * 1000)
        canaries = None
        if canary is not None and graded.canary is not None:
            orders = ran.get("answer_orders")
            canaries = [canary_result(canary, graded.canary, graded.answers, orders)]
            ran["answer_orders"] = without_canary(orders, canary)  # the caller never sees the canary
        stored = StoredJudgement(
            judgement_id=judgement_id,
            created_at=datetime.now(UTC),
            status=_group_status(graded.answers),
            grader=plan.grader,
            run_id=request.run_id,
            step=request.step,
            group_key=request.group_key,
            answers=graded.answers,
            request=request,
            grader_fingerprint=self._fingerprints.of(plan),
            regrade_of=regrade_of,
            rubric=rubric,
            length_bias=length_bias(request.answers, graded.answers),
            canaries=canaries,
            caller=caller,
            cascade=graded.cascade,
            **ran,
        )
        return await self._store_and_observe(stored, idempotency)

    async def _store_and_observe(
        self, stored: StoredJudgement, idempotency: IdempotencyKey | None
    ) -> JudgeResponse:
        """Save, then count it; a save that failed for the store's sake is a truthful, retryable 503, and
        with an idempotency key the judgement is kept (bounded) for the retry to store."""
        try:
            await self._store.save(stored, idempotency=idempotency)
        except StoreUnavailableError as exc:
            if idempotency is None:
                raise StoreUnavailableError(
                    f"the group was judged but the judgement could not be stored ({exc.message}); send it "
                    "again (with an Idempotency-Key, a retry would not judge it twice)"
                ) from exc
            self._unsaved[idempotency.key] = (idempotency.request_hash, stored)
            while len(self._unsaved) > UNSAVED_KEPT:
                self._unsaved.popitem(last=False)
            raise StoreUnavailableError(
                f"the group was judged but the judgement could not be stored ({exc.message}); send the same "
                "request with the same Idempotency-Key again: this replica keeps the judgement and stores "
                "it then, without judging again",
                details={"judgement_id": stored.judgement_id},
            ) from exc
        self._observe(stored)
        if self._auditor is not None:
            self._auditor.offer(stored)  # re-judged later, in the background: the reply is already made
        return stored.response()

    async def grade_batch(
        self, requests: list[JudgeRequest], *, idempotency_key: str | None = None, caller: str | None = None
    ) -> list[BatchItem]:
        """All groups concurrently (the engine batches them); one group's failure fails only that group.
        With an idempotency key, group i is at most once per key, caller and index (idempotency.py)."""
        grade = functools.partial(self._grade, caller=caller)
        outcomes = await asyncio.gather(
            *(
                self._once(r, _scoped(idempotency_key, caller, group=i), grade)
                for i, r in enumerate(requests)
            ),
            return_exceptions=True,
        )
        items = []
        for outcome in outcomes:
            if isinstance(outcome, JudgeResponse):
                items.append(BatchItem(judgement=outcome))
            elif isinstance(outcome, JudgeServiceError):
                items.append(BatchItem(error=_error_body(outcome)))
            else:
                raise outcome
        return items

    async def regrade(
        self, request: RegradeRequest, *, idempotency_key: str | None = None, caller: str | None = None
    ) -> RegradeResponse:
        """Re-score stored groups under other grader settings (regrade.py); failures per group.
        With an idempotency key, each stored group is re-scored at most once per key and caller."""
        next_cursor = None
        if request.judgement_ids is not None:
            ids = request.judgement_ids
        else:
            page = await self._store.list_run(
                request.run_id or "", step=request.step, limit=request.limit, cursor=request.cursor
            )
            ids = [item.judgement_id for item in page.items if item.regrade_of is None]
            next_cursor = page.next_cursor
        results = await asyncio.gather(
            *(self._regrade_one(old_id, request, idempotency_key, caller) for old_id in ids)
        )
        return RegradeResponse(results=list(results), next_cursor=next_cursor)

    async def _regrade_one(
        self, old_id: str, overrides: RegradeRequest, idempotency_key: str | None, caller: str | None
    ) -> RegradeItem:
        try:
            old = await self.get(old_id)
            new = await self._once(
                regraded_request(old, overrides),
                _scoped(idempotency_key, caller, regrade_of=old_id),
                functools.partial(self._grade, regrade_of=old_id, regraded=old, caller=caller),
            )
        except JudgeServiceError as exc:
            return RegradeItem(regrade_of=old_id, error=_error_body(exc))
        return RegradeItem(regrade_of=old_id, judgement=new)

    async def stored_under(self, idempotency_key: str, caller: str | None) -> KeyedJudgement | None:
        """The judgement stored under a caller's Idempotency-Key, with the hash of the request it was judged
        for, if any (group assembly looks up groups judged already)."""
        return await self._store.get_by_idempotency_key(ScopedKey(idempotency_key, caller).stored)

    async def get(self, judgement_id: str) -> StoredJudgement:
        """A stored judgement, with the reasons written for it afterwards when there are some."""
        found = await self._stored(judgement_id)
        explained = await self._store.explained_of(judgement_id)
        return found if explained is None else found.model_copy(update={"explained": explained})

    async def _stored(self, judgement_id: str) -> StoredJudgement:
        found = await self._store.get(judgement_id)
        if found is None:
            raise NotFoundError(f"no judgement with id {judgement_id!r}")
        return found

    async def explain(self, judgement_id: str) -> ExplainedReasons:
        """Reasons for a marks-only judgement's marks, written by its judge once and stored apart
        (judging/llm/explain.py); later calls, here or on another replica, get the stored ones. Calls for
        one judgement on this replica share one judge call."""
        stored = await self._store.explained_of(judgement_id)
        if stored is not None:
            return stored
        running = self._explaining.get(judgement_id)
        if running is None:
            running = asyncio.ensure_future(self._explain(judgement_id))
            self._explaining[judgement_id] = running
            running.add_done_callback(lambda _: self._explaining.pop(judgement_id, None))
        return await asyncio.shield(running)

    async def _explain(self, judgement_id: str) -> ExplainedReasons:
        judgement = await self._stored(judgement_id)
        judge = self._graders.explainer(judgement.judge_model)
        canary = Canary.of(judgement)
        reasons = await judge.explain(judgement, None if canary is None else canary.answer)
        kept = await self._store.save_explained(judgement_id, reasons)
        self._metrics.explained.inc()
        return kept

    async def list_run(
        self, run_id: str, *, step: int | None, limit: int, cursor: str | None
    ) -> JudgementPage:
        return await self._store.list_run(run_id, step=step, limit=limit, cursor=cursor)

    async def list_runs(self, *, limit: int, cursor: str | None) -> RunPage:
        return await self._store.list_runs(limit=limit, cursor=cursor)

    async def save_labels(self, labels: HumanLabels, *, run_id: str | None) -> None:
        await self._store.save_labels(labels, run_id=run_id)

    async def labels_of(self, judgement_id: str) -> list[HumanLabels]:
        return await self._store.labels_of(judgement_id)

    async def run_labels(self, run_id: str) -> list[HumanLabels]:
        return await self._store.run_labels(run_id)

    async def regrades_of(self, judgement_ids: list[str]) -> list[StoredJudgement]:
        return await self._store.regrades_of(judgement_ids)

    async def run_summary(self, run_id: str) -> RunSummary | None:
        return await self._store.run_summary(run_id)

    async def run_steps(
        self, run_id: str, *, after: int, until: int | None, fingerprint: str | None, limit: int
    ) -> RunSteps:
        steps = await self._store.run_steps(
            run_id, after=after, until=until, fingerprint=fingerprint, limit=limit
        )
        summary = await self._audit_summaries.of(run_id)
        if summary is None:
            return steps
        by_step, audit = summary
        return steps.model_copy(
            update={
                "items": [s.model_copy(update={"audit": by_step.get(s.step)}) for s in steps.items],
                "audit": audit,
            }
        )

    async def audit_of(self, judgement_id: str) -> AuditRecord:
        """The audit judge's record of a judgement; 404 when it was not audited (or not yet)."""
        record = await self._store.audit_of(judgement_id)
        if record is None:
            await self._stored(judgement_id)  # 404 naming the judgement when there is none
            raise NotFoundError(
                f"judgement {judgement_id!r} was not audited (JUDGE_AUDIT draws JUDGE_AUDIT_RATE of each "
                "step's groups, in the background: it may not be done yet)"
            )
        return record

    def _observe(self, judgement: StoredJudgement) -> None:
        m = self._metrics
        m.child(m.group_seconds, judgement.grader).observe(judgement.timings.total_ms / 1000)
        m.answers_per_group.observe(len(judgement.answers))
        m.child(m.groups, judgement.grader, judgement.status).inc()
        unscored = sum(1 for a in judgement.answers if a.status == "unscored")
        if unscored:
            m.unscored_answers.labels(grader=judgement.grader).inc(unscored)
        if judgement.reasons is not None:
            m.child(m.groups_by_reasons, judgement.reasons).inc()
        if judgement.order_sensitivity is not None:
            m.order_sensitivity.observe(judgement.order_sensitivity)
        if judgement.cascade is not None:
            m.cascade_groups.labels(path=judgement.cascade).inc()
        if judgement.length_bias is not None:
            m.length_bias.observe(judgement.length_bias)
        for canary in judgement.canaries or ():
            if canary.score is not None:
                m.canary_score.labels(kind=canary.kind).observe(canary.score)
            if canary.outranked is not None:
                m.canary_groups.labels(kind=canary.kind).inc()
                if canary.outranked:
                    m.canary_outranked.labels(kind=canary.kind).inc()


def _scoped(
    idempotency_key: str | None,
    caller: str | None,
    *,
    group: int | None = None,
    regrade_of: str | None = None,
) -> ScopedKey | None:
    if idempotency_key is None:
        return None
    return ScopedKey(idempotency_key, caller, group=group, regrade_of=regrade_of)


def _error_body(exc: JudgeServiceError) -> ErrorBody:
    """One group's failure inside a batch or regrade reply, as a single request would report it."""
    return ErrorBody(code=exc.code, message=exc.message, details=exc.details or None)


def _model_run_fields(run: ModelRun | None, *, total_ms: float) -> dict[str, Any]:
    """The stored judgement's fields that say what the model grader ran; their defaults when none ran."""
    if run is None:
        return {
            "judge_model": None,
            "prompt_version": None,
            "usage": Usage(),
            "timings": Timings(total_ms=total_ms),
            "attempts": 0,
            "raw_outputs": [],
        }
    return {
        "judge_model": run.model,
        "prompt_version": run.prompt_version,
        "usage": run.usage,
        "timings": Timings(queue_ms=run.queue_ms, judge_ms=run.judge_ms, total_ms=total_ms),
        "attempts": run.usage.judge_calls,
        "raw_outputs": run.raw_outputs,
        "thinking": run.thinking,
        "reasons": run.reasons,
        "order_seed": run.seed,
        "answer_orders": run.orders,
        "order_sensitivity": run.order_sensitivity,
        "comparisons": run.comparisons,
        "jury": run.jury,
    }


def _group_status(answers: list[AnswerResult]) -> GroupStatus:
    scored = sum(1 for a in answers if a.status == "scored")
    if scored == len(answers):
        return "ok"
    return "partial" if scored else "failed"
