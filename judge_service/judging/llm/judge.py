"""The LLM judge as a grader: a group's whole judge run, from answer orders to a grade per answer.

For one group: check the judge is ready, pick the answer order(s) (orders.py), render and fit the
prompt for each (caller.py), wait for an admission slot (admission.py), judge every order with retries
and combine them, then turn the marks into each answer's grade: the weighted mean of its criterion scores
(mark - 1) / 4, or unscored with the judge's reason, never 0.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge_service.admission import GroupAdmission
from judge_service.errors import JudgeServiceError
from judge_service.judging.base import AnswerGrade, Group, GroupGrades, ModelRun
from judge_service.judging.llm.caller import JudgeCaller, JudgeOutcome
from judge_service.judging.llm.criteria import resolve_criteria
from judge_service.judging.llm.orders import (
    criterion_score,
    judge_in_orders,
    order_seed,
    order_sensitivity,
    shown_orders,
)
from judge_service.metrics import JudgeMetrics
from judge_service.readiness import Readiness
from judge_service.schemas import Criterion, JudgeRequest

JUDGE = "judge"


@dataclass(frozen=True)
class JudgeOptions:
    """The judge's options from a request. Frozen and hashable: fingerprints are cached per options."""

    criteria: tuple[Criterion, ...]
    orders: int = 1
    seed: int | None = None  # of the shuffled order; None: from the judgement id


class LLMJudge:
    """Grader[JudgeOptions] (judging/base.py) over one judge backend."""

    runs_model = True

    def __init__(
        self,
        caller: JudgeCaller,
        *,
        admission: GroupAdmission,
        metrics: JudgeMetrics,
        readiness: Readiness,
        name: str = JUDGE,
    ) -> None:
        self._caller = caller
        self._admission = admission
        self._metrics = metrics
        self._readiness = readiness
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def options(self, request: JudgeRequest) -> JudgeOptions:
        return JudgeOptions(tuple(resolve_criteria(request.criteria)), request.orders, request.seed)

    def config(self, options: JudgeOptions) -> Mapping[str, Any]:
        s = self._caller.settings
        judge = {
            "model": self._caller.model_name,
            "prompt_version": self._caller.prompt_version,
            "temperature": s.temperature,
            "reason_max_chars": s.reason_max_chars,
            "parse_retries": s.parse_retries,
            "shuffle_answers": s.shuffle_answers,
        }
        criteria = [c.model_dump() for c in options.criteria]
        return {"judge": judge, "orders": options.orders, "criteria": criteria}

    async def grade(self, group: Group, options: JudgeOptions) -> GroupGrades:
        self._readiness.check_judging()
        criteria = list(options.criteria)
        answer_ids = [a.id for a in group.answers]
        # Position bias: the judge sees the answers in seeded shuffled order(s); marks come back by id.
        shuffle = self._caller.settings.shuffle_answers
        seed = options.seed if options.seed is not None else order_seed(group.judgement_id)
        orders = shown_orders(answer_ids, seed=seed, count=options.orders, shuffle=shuffle)
        by_id = {a.id: a for a in group.answers}
        generations = [
            await self._caller.prepare(
                conversation=list(group.conversation),
                reference=group.reference,
                answers=[by_id[answer_id] for answer_id in order],
                criteria=criteria,
                request_id=group.judgement_id if i == 0 else f"{group.judgement_id}-o{i}",
                group_id=group.judgement_id,
            )
            for i, order in enumerate(orders)
        ]
        queued = time.perf_counter()
        try:
            async with self._admission.slot():
                admitted = time.perf_counter()
                names = [c.name for c in criteria]
                outcome = await judge_in_orders(self._caller, generations, answer_ids, names)
        except JudgeServiceError as exc:
            self._metrics.backend_errors.labels(code=exc.code).inc()
            raise
        run = ModelRun(
            model=self._caller.model_name,
            prompt_version=outcome.prompt_version,
            usage=outcome.usage,
            raw_outputs=outcome.raw_outputs,
            queue_ms=(admitted - queued) * 1000,
            judge_ms=outcome.judge_ms,
            seed=seed if shuffle else None,
            orders=orders,
            order_sensitivity=order_sensitivity(outcome.order_parses, {c.name: c.weight for c in criteria}),
        )
        grades = {answer_id: _answer_grade(answer_id, outcome, criteria) for answer_id in answer_ids}
        return GroupGrades(grades, run)


def _answer_grade(answer_id: str, outcome: JudgeOutcome, criteria: list[Criterion]) -> AnswerGrade:
    marks = outcome.parsed.marks.get(answer_id)
    if marks is None:
        reason = outcome.parsed.failures.get(answer_id, "the judge gave no marks for this answer")
        return AnswerGrade(None, reason)
    scores = {c.name: criterion_score(outcome, answer_id, c.name) for c in criteria}
    per_criterion = {
        c.name: {"mark": marks[c.name].mark, "score": scores[c.name], "reason": marks[c.name].reason}
        for c in criteria
    }
    overall = sum(scores[c.name] * c.weight for c in criteria) / sum(c.weight for c in criteria)
    return AnswerGrade(
        round(overall, 6), "weighted mean of the judge's criterion scores", criteria=per_criterion
    )
