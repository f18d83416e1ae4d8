"""The LLM judge as a grader: a group's whole judge run, from answer orders to a grade per answer.

For one group: check the judge is ready, pick the answer order(s) (orders.py), render and fit the
prompt(s) for each in the request's decoding (caller.py), wait for an admission slot (admission.py),
judge every order with retries and combine them, then turn the marks into each answer's grade: the
weighted mean of its criterion scores, or unscored with the judge's reason, never 0.

A criterion's score is (mark - 1) / 4 from the integer mark, or with `score_from: expected` from the
expected mark (expected.py), which breaks the integer marks' ties; where the backend gave no
log-probabilities the integer mark stands in and the answer's explanation says so.

Reasons (`reasons`): the judge writes a reason before each mark ("inline"), or marks only ("none"; the
reasons can be written afterwards, explain.py), or inline for a share of groups drawn by judgement id
("sample", reasons.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge_service.backends.readiness import Readiness
from judge_service.errors import JudgeServiceError
from judge_service.judging.base import AnswerGrade, Group, GroupGrades, ModelRun
from judge_service.judging.language import LANGUAGE_NAMES, language_of
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller, JudgeOutcome
from judge_service.judging.llm.criteria import resolve_criteria
from judge_service.judging.llm.explain import explain_marks
from judge_service.judging.llm.orders import (
    criterion_score,
    judge_in_orders,
    order_seed,
    order_sensitivity,
    shown_orders,
)
from judge_service.judging.llm.reasons import writes_reasons
from judge_service.judging.llm.thinking import OFF, ThinkingMode
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import (
    Answer,
    Criterion,
    Decoding,
    ExplainedReasons,
    JudgeRequest,
    Reasons,
    ScoreFrom,
    StoredJudgement,
    ThinkingInfo,
)

JUDGE = "judge"


@dataclass(frozen=True)
class JudgeOptions:
    """The judge's options from a request. Frozen and hashable: fingerprints are cached per options."""

    criteria: tuple[Criterion, ...]
    orders: int = 1
    seed: int | None = None  # of the shuffled order; None: from the judgement id
    decoding: Decoding = "group"
    score_from: ScoreFrom = "mark"
    reason_language: str | None = None  # a code, or "auto": the conversation's language
    thinking: ThinkingMode = OFF
    reasons: Reasons = "inline"


class LLMJudge:
    """Grader[JudgeOptions] (judging/base.py) over one judge backend."""

    runs_model = True
    sees_canary = True  # the judge compares answers: a canary is shown among them (judging/base.py)

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

    @property
    def model_name(self) -> str:
        return self._caller.model_name

    def options(self, request: JudgeRequest) -> JudgeOptions:
        s = self._caller.settings
        decoding = request.decoding or s.decoding
        self._caller.check_decoding(decoding)
        reasons = request.reasons or s.reasons
        if reasons != "inline":
            self._caller.check_marks_only(decoding)
        return JudgeOptions(
            tuple(resolve_criteria(request.criteria)),
            request.orders,
            request.seed,
            decoding,
            request.score_from or s.score_from,
            request.reason_language or s.reason_language,
            self._caller.thinking_mode(request.thinking, request.reasoning_effort),
            reasons,
        )

    def config(self, options: JudgeOptions) -> Mapping[str, Any]:
        s = self._caller.settings
        judge: dict[str, Any] = {
            "model": self._caller.model_name,
            "prompt_version": self._caller.prompt_version(options.decoding),
            "temperature": s.temperature,
            "reason_max_chars": s.reason_max_chars,
            "parse_retries": s.parse_retries,
            "shuffle_answers": s.shuffle_answers,
        }
        # Added only when not the original behaviour, so fingerprints of judgements made before these
        # options existed still match (fingerprint.py).
        if options.decoding != "group":
            judge["decoding"] = options.decoding
        if s.reason_words:
            judge["reason_words"] = True
        if options.score_from != "mark":
            judge["score_from"] = options.score_from
            judge["mark_logprobs"] = s.mark_logprobs
        if options.reason_language is not None:
            judge["reason_language"] = options.reason_language
        if options.reasons != "inline":
            judge["reasons"] = options.reasons
            if options.reasons == "sample":
                judge["reason_sample_rate"] = s.reason_sample_rate
        thinking = options.thinking.config()
        if thinking is not None:
            judge["thinking"] = thinking
        if s.chat_template_sha256 is not None:
            judge["chat_template"] = s.chat_template_sha256
        criteria = [c.model_dump() for c in options.criteria]
        return {"judge": judge, "orders": options.orders, "criteria": criteria}

    def thinking_info(self) -> ThinkingInfo:
        profile = self._caller.thinking_profile
        return ThinkingInfo(
            switch=profile.switch,
            parser=profile.parser,
            enforces_budget=profile.enforces_budget,
            takes_reasoning_effort=profile.takes_effort,
            source=profile.source,
        )

    async def grade(self, group: Group, options: JudgeOptions) -> GroupGrades:
        self._readiness.check_judging()
        criteria = list(options.criteria)
        caller_ids = [a.id for a in group.answers]
        # Position bias: the judge sees the answers in seeded shuffled order(s); marks come back by id.
        shuffle = self._caller.settings.shuffle_answers
        seed = options.seed if options.seed is not None else order_seed(group.judgement_id)
        orders = shown_orders(caller_ids, seed=seed, count=options.orders, shuffle=shuffle)
        # A canary goes into each order without moving the caller's answers (judging/base.py).
        orders = [group.with_canary(order, i) for i, order in enumerate(orders)]
        shown = [*group.answers, *([group.canary] if group.canary is not None else [])]
        answer_ids = [a.id for a in shown]
        by_id = {a.id: a for a in shown}
        reason_language = _reason_language(options.reason_language, group)
        inline = writes_reasons(options.reasons, group.judgement_id, self._caller.settings.reason_sample_rate)
        prepared = [
            await self._caller.prepare(
                conversation=list(group.conversation),
                reference=group.reference,
                answers=[by_id[answer_id] for answer_id in order],
                criteria=criteria,
                request_id=group.judgement_id if i == 0 else f"{group.judgement_id}-o{i}",
                group_id=group.judgement_id,
                decoding=options.decoding,
                reason_language=reason_language,
                thinking=options.thinking,
                alone=None if group.canary is None else group.canary.id,
                reasons=inline,
            )
            for i, order in enumerate(orders)
        ]
        queued = time.perf_counter()
        try:
            async with self._admission.slot():
                admitted = time.perf_counter()
                names = [c.name for c in criteria]
                outcome = await judge_in_orders(self._caller, prepared, answer_ids, names)
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
            order_sensitivity=order_sensitivity(
                outcome.order_parses, {c.name: c.weight for c in criteria}, caller_ids
            ),
            thinking=outcome.thinking or None,
            reasons="inline" if inline else "none",
        )
        expected = options.score_from == "expected"
        grades = {a: _answer_grade(a, outcome, criteria, expected=expected) for a in answer_ids}
        return GroupGrades(grades, run)

    async def explain(self, stored: StoredJudgement, canary: Answer | None) -> ExplainedReasons:
        """Reasons for a marks-only judgement's marks, written now by this judge (explain.py)."""
        self._readiness.check_judging()
        asked = stored.request.reason_language or self._caller.settings.reason_language
        language = _reason_language(asked, Group.of(stored.request, stored.judgement_id))
        async with self._admission.slot():
            return await explain_marks(self._caller, stored, canary, language)


def _answer_grade(
    answer_id: str, outcome: JudgeOutcome, criteria: list[Criterion], *, expected: bool
) -> AnswerGrade:
    marks = outcome.parsed.marks.get(answer_id)
    if marks is None:
        reason = outcome.parsed.failures.get(answer_id, "the judge gave no marks for this answer")
        return AnswerGrade(None, reason)
    scores = {c.name: criterion_score(outcome, answer_id, c.name, expected=expected) for c in criteria}
    per_criterion = {
        c.name: {
            "mark": marks[c.name].mark,
            "expected_mark": marks[c.name].expected,
            "score": scores[c.name],
            "reason": marks[c.name].reason,
        }
        for c in criteria
    }
    overall = sum(scores[c.name] * c.weight for c in criteria) / sum(c.weight for c in criteria)
    explanation = "weighted mean of the judge's criterion scores"
    if expected:
        why_not = outcome.no_expected.get(answer_id)
        explanation += (
            f" from integer marks where expected marks are missing ({why_not})"
            if why_not
            else " from expected marks"
        )
    return AnswerGrade(round(overall, 6), explanation, criteria=per_criterion)


def _reason_language(option: str | None, group: Group) -> str | None:
    """The English name of the language reasons are asked in: the option's, or for "auto" the
    conversation's (None when it cannot be told: the prompt then asks for none)."""
    if option == "auto":
        option = language_of(group.conversation_text())
    return LANGUAGE_NAMES[option] if option is not None else None
