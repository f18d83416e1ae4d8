"""Orchestration of one group: grader -> prompt -> admission -> backend -> parser -> store -> metrics."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from judge_service.admission import GroupAdmission
from judge_service.criteria import resolve_criteria
from judge_service.errors import JudgeServiceError, NotFoundError, NotReadyError
from judge_service.graders.blend import TermGrade
from judge_service.graders.composite import GradingPlan, combine, plan_for, rule_grades
from judge_service.graders.llm_judge import JudgeOutcome, LLMJudge
from judge_service.idempotency import GradeFn, IdempotencyGuard, ScopedKey
from judge_service.metrics import JudgeMetrics
from judge_service.quality.fingerprint import grader_fingerprint
from judge_service.quality.orders import (
    criterion_score,
    judge_in_orders,
    order_seed,
    order_sensitivity,
    shown_orders,
)
from judge_service.quality.regrade import RegradeItem, RegradeRequest, RegradeResponse, regraded_request
from judge_service.schemas import (
    AnswerResult,
    BatchItem,
    Criterion,
    ErrorBody,
    GroupStatus,
    JudgementPage,
    JudgeRequest,
    JudgeResponse,
    StoredJudgement,
    Timings,
    Usage,
)
from judge_service.store.base import IdempotencyKey, JudgementStore


@dataclass(frozen=True)
class _JudgeRun:
    outcome: JudgeOutcome
    answers: dict[str, AnswerResult]  # by answer id: marks, or unscored with the reason
    queue_ms: float
    seed: int | None = None  # of the shuffled answer order; None when not shuffled
    orders: list[list[str]] | None = None  # answer ids in the order shown, per judge order
    order_sensitivity: float | None = None


class JudgeService:
    def __init__(
        self,
        *,
        judge: LLMJudge,
        store: JudgementStore,
        metrics: JudgeMetrics,
        admission: GroupAdmission,
    ) -> None:
        self._judge = judge
        self._store = store
        self._metrics = metrics
        self._admission = admission
        self._idempotency = IdempotencyGuard(store, metrics)
        self.judge_ready = False
        self.load_error: str | None = None

    async def grade(
        self, request: JudgeRequest, *, idempotency_key: str | None = None, caller: str | None = None
    ) -> JudgeResponse:
        """Grade and store one group; with an idempotency key, at most once per key and caller
        (idempotency.py)."""
        return await self._once(request, _scoped(idempotency_key, caller), self._grade)

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
        idempotency: IdempotencyKey | None = None,
    ) -> JudgeResponse:
        started = time.perf_counter()
        judgement_id = uuid.uuid4().hex
        plan = plan_for(request)
        # Rule graders are cheap and may refuse the request (422): run them before queueing for the judge.
        rules = await _rule_grades(plan, request)
        judge_run = await self._run_judge(request, judgement_id) if plan.uses_judge else None
        answers = [
            combine(a.id, plan, judge_run.answers[a.id] if judge_run else None, rules[a.id])
            for a in request.answers
        ]
        outcome = judge_run.outcome if judge_run else None
        stored = StoredJudgement(
            judgement_id=judgement_id,
            created_at=datetime.now(UTC),
            status=_group_status(answers),
            grader=plan.grader,
            judge_model=self._judge.model_name if outcome else None,
            prompt_version=outcome.prompt_version if outcome else None,
            run_id=request.run_id,
            step=request.step,
            group_key=request.group_key,
            answers=answers,
            usage=outcome.usage if outcome else Usage(),
            timings=Timings(
                queue_ms=judge_run.queue_ms if judge_run else 0.0,
                judge_ms=outcome.judge_ms if outcome else 0.0,
                total_ms=(time.perf_counter() - started) * 1000,
            ),
            attempts=outcome.usage.judge_calls if outcome else 0,
            request=request,
            raw_outputs=outcome.raw_outputs if outcome else [],
            order_seed=judge_run.seed if judge_run else None,
            answer_orders=judge_run.orders if judge_run else None,
            order_sensitivity=judge_run.order_sensitivity if judge_run else None,
            grader_fingerprint=grader_fingerprint(plan, request, self._judge),
            regrade_of=regrade_of,
        )
        await self._store.save(stored, idempotency=idempotency)
        self._observe(stored)
        return stored.response()

    async def _run_judge(self, request: JudgeRequest, judgement_id: str) -> _JudgeRun:
        if not self.judge_ready:
            if self.load_error:
                raise NotReadyError(f"the judge backend failed to start: {self.load_error}")
            raise NotReadyError("the judge model is still loading; retry when /readyz answers 200")
        criteria = resolve_criteria(request.criteria)
        answer_ids = [a.id for a in request.answers]
        # Position bias: the judge sees the answers in seeded shuffled order(s); marks come back by id.
        shuffle = self._judge.settings.shuffle_answers
        seed = request.seed if request.seed is not None else order_seed(judgement_id)
        orders = shown_orders(answer_ids, seed=seed, count=request.orders, shuffle=shuffle)
        by_id = {a.id: a for a in request.answers}
        generations = [
            await self._judge.prepare(
                conversation=request.conversation,
                reference=request.reference,
                answers=[by_id[answer_id] for answer_id in order],
                criteria=criteria,
                request_id=judgement_id if i == 0 else f"{judgement_id}-o{i}",
            )
            for i, order in enumerate(orders)
        ]
        queued = time.perf_counter()
        try:
            async with self._admission.slot():
                admitted = time.perf_counter()
                names = [c.name for c in criteria]
                outcome = await judge_in_orders(self._judge, generations, answer_ids, names)
        except JudgeServiceError as exc:
            self._metrics.backend_errors.labels(code=exc.code).inc()
            raise
        return _JudgeRun(
            outcome=outcome,
            answers={answer_id: _judged_answer(answer_id, outcome, criteria) for answer_id in answer_ids},
            queue_ms=(admitted - queued) * 1000,
            seed=seed if shuffle else None,
            orders=orders,
            order_sensitivity=order_sensitivity(outcome.order_parses, {c.name: c.weight for c in criteria}),
        )

    async def grade_batch(
        self, requests: list[JudgeRequest], *, idempotency_key: str | None = None, caller: str | None = None
    ) -> list[BatchItem]:
        """All groups concurrently (the engine batches them); one group's failure fails only that group.
        With an idempotency key, group i is at most once per key, caller and index (idempotency.py)."""
        outcomes = await asyncio.gather(
            *(
                self._once(r, _scoped(idempotency_key, caller, group=i), self._grade)
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
        """Re-score stored groups under other grader settings (quality/regrade.py); failures per group.
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
                functools.partial(self._grade, regrade_of=old_id),
            )
        except JudgeServiceError as exc:
            return RegradeItem(regrade_of=old_id, error=_error_body(exc))
        return RegradeItem(regrade_of=old_id, judgement=new)

    async def get(self, judgement_id: str) -> StoredJudgement:
        found = await self._store.get(judgement_id)
        if found is None:
            raise NotFoundError(f"no judgement with id {judgement_id!r}")
        return found

    async def list_run(
        self, run_id: str, *, step: int | None, limit: int, cursor: str | None
    ) -> JudgementPage:
        return await self._store.list_run(run_id, step=step, limit=limit, cursor=cursor)

    def _observe(self, judgement: StoredJudgement) -> None:
        m = self._metrics
        m.group_seconds.labels(grader=judgement.grader).observe(judgement.timings.total_ms / 1000)
        m.answers_per_group.observe(len(judgement.answers))
        m.groups.labels(grader=judgement.grader, status=judgement.status).inc()
        unscored = sum(1 for a in judgement.answers if a.status == "unscored")
        if unscored:
            m.unscored_answers.labels(grader=judgement.grader).inc(unscored)
        if judgement.order_sensitivity is not None:
            m.order_sensitivity.observe(judgement.order_sensitivity)


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


# Above this many characters of answers (plus the reference once per answer) rule grading moves to a
# worker thread: a full group of 20,000-character answers can take a second or two of CPU (the
# adversarial table of benchmarks/rule_graders.py), and the GIL switches every few milliseconds, so the
# event loop keeps answering other requests meanwhile. Below it the thread hop would cost more.
RULE_GRADING_INLINE_CHARS = 50_000


async def _rule_grades(plan: GradingPlan, request: JudgeRequest) -> dict[str, list[TermGrade]]:
    size = sum(len(a.text) + len(request.reference) for a in request.answers) if plan.uses_rules else 0
    if size <= RULE_GRADING_INLINE_CHARS:
        return rule_grades(plan, request)
    return await asyncio.to_thread(rule_grades, plan, request)


def _judged_answer(answer_id: str, outcome: JudgeOutcome, criteria: list[Criterion]) -> AnswerResult:
    marks = outcome.parsed.marks.get(answer_id)
    if marks is None:
        reason = outcome.parsed.failures.get(answer_id, "the judge gave no marks for this answer")
        return AnswerResult(id=answer_id, status="unscored", score=None, error=reason)
    # Plain dicts validated once per answer: cheaper than a model object per criterion.
    scores = {c.name: criterion_score(outcome, answer_id, c.name) for c in criteria}
    per_criterion = {
        c.name: {"mark": marks[c.name].mark, "score": scores[c.name], "reason": marks[c.name].reason}
        for c in criteria
    }
    overall = sum(scores[c.name] * c.weight for c in criteria) / sum(c.weight for c in criteria)
    return AnswerResult.model_validate(
        {"id": answer_id, "status": "scored", "score": round(overall, 6), "criteria": per_criterion}
    )


def _group_status(answers: list[AnswerResult]) -> GroupStatus:
    scored = sum(1 for a in answers if a.status == "scored")
    if scored == len(answers):
        return "ok"
    return "partial" if scored else "failed"
