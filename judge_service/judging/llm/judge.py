"""The LLM judge as a grader: a group's whole judge run, from answer orders to a grade per answer.

For one group: check the judge is ready, pick the answer order(s) (orders.py), render and fit the
prompt(s) for each in the request's decoding (caller.py), wait for an admission slot (admission.py),
judge every order with retries and combine them, then turn the marks into each answer's grade
(scoring.py: the weighted mean of its criterion scores, or unscored with the judge's reason, never 0).

Reasons (`reasons`): the judge writes a reason before each mark ("inline"), or marks only ("none"; the
reasons can be written afterwards, explain.py), or inline for a share of groups drawn by judgement id
("sample", reasons.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from judge_service.backends.readiness import Readiness
from judge_service.config import JudgingSettings
from judge_service.errors import InvalidGroupError, JudgeServiceError
from judge_service.judging.base import Group, GroupGrades, ModelRun
from judge_service.judging.language import reason_language_name
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller, OrderPlan
from judge_service.judging.llm.criteria import criterion_config, resolve_criteria
from judge_service.judging.llm.explain import explain_marks
from judge_service.judging.llm.orders import judge_in_orders, order_seed, shown_orders
from judge_service.judging.llm.prompt import is_checklist
from judge_service.judging.llm.reasons import writes_reasons
from judge_service.judging.llm.rubric_writer import WrittenRubric, write_rubric
from judge_service.judging.llm.scoring import Scoring, order_sensitivity
from judge_service.judging.llm.thinking import OFF, ThinkingMode
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import (
    Answer,
    ChatMessage,
    Criterion,
    Decoding,
    ExplainedReasons,
    JudgeRequest,
    Reasons,
    ScoreFrom,
    StoredJudgement,
    ThinkingInfo,
    canonical_json,
    sha256_hex,
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
    # Rubrics written per prompt (rubric "generate"): how they are written, which the fingerprint covers
    # in place of each prompt's items (docs/rubrics.md).
    rubric: str | None = None
    referenced: bool = True  # False: a group without a reference, judged with the no_reference/ prompts
    structured: bool = False  # tools or trajectories: shown by turns.py, under its cuts
    attribution: bool = False  # each mark names the steps it rests on (request `attribution: "steps"`)


class LLMJudge:
    """Grader[JudgeOptions] (judging/base.py) over one judge backend."""

    runs_model = True
    sees_canary = True  # the judge compares answers: a canary is shown among them (judging/base.py)

    def __init__(
        self,
        caller: JudgeCaller,
        *,
        admission: GroupAdmission | None,
        metrics: JudgeMetrics,
        readiness: Readiness,
        name: str = JUDGE,
    ) -> None:
        """`admission` None: the caller holds a slot already (a jury's judge, judging/jury/)."""
        self._caller = caller
        self._admission = admission
        self._metrics = metrics
        self._readiness = readiness
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def readiness(self) -> Readiness:
        return self._readiness

    def _slot(self) -> AbstractAsyncContextManager[None]:
        return nullcontext() if self._admission is None else self._admission.slot()

    @property
    def model_name(self) -> str:
        return self._caller.model_name

    @property
    def settings(self) -> JudgingSettings:
        return self._caller.settings

    def options(self, request: JudgeRequest) -> JudgeOptions:
        s = self._caller.settings
        decoding = request.decoding or self._caller.decoding
        self._caller.check_decoding(decoding)
        reasons = request.reasons or s.reasons
        if reasons != "inline":
            self._caller.check_marks_only(decoding)
            if request.attribution is not None:
                raise InvalidGroupError(
                    f"attribution 'steps' is written beside each mark's reason; with reasons {reasons!r} "
                    "there are none: use reasons 'inline', or leave attribution out",
                    details={"attribution": request.attribution, "reasons": reasons},
                )
        referenced = request.reference is not None
        criteria = tuple(resolve_criteria(request.criteria, referenced=referenced))
        if not referenced:
            self._caller.check_reference_free(
                decoding, reasons=reasons == "inline", checklist=is_checklist(criteria)
            )
        return JudgeOptions(
            criteria,
            request.orders,
            request.seed,
            decoding,
            request.score_from or s.score_from,
            request.reason_language or s.reason_language,
            self._caller.thinking_mode(request.thinking, request.reasoning_effort),
            reasons,
            self.rubric_config(referenced=referenced) if request.rubric == "generate" else None,
            referenced,
            request.structured,
            request.attribution is not None,
        )

    def rubric_config(self, *, referenced: bool = True) -> str:
        """How rubric 'generate' writes a rubric (writer prompt, items, instructions), as the fingerprint
        covers it; 422 where the prompt template has no rubric writer."""
        s = self._caller.settings
        instructions = s.rubric_instructions
        return canonical_json(
            {
                "writer": self.rubric_writer_version(referenced=referenced),
                "items": s.rubric_items,
                "instructions": None if instructions is None else sha256_hex(instructions),
            }
        )

    def rubric_writer_version(self, *, referenced: bool = True) -> str:
        try:
            return self._caller.renderer.rubric_version(referenced=referenced)
        except FileNotFoundError as exc:
            raise InvalidGroupError(f"rubrics cannot be written: {exc}") from None

    async def write_rubric(
        self,
        conversation: list[ChatMessage],
        reference: str | None,
        *,
        items: int,
        instructions: str | None,
        request_id: str,
    ) -> WrittenRubric:
        """A checklist rubric for a conversation, written by this judge (rubric_writer.py)."""
        self._readiness.check_judging()
        self.rubric_writer_version(referenced=reference is not None)
        async with self._slot():
            return await write_rubric(
                self._caller,
                conversation,
                reference,
                items=items,
                instructions=instructions,
                request_id=request_id,
            )

    def config(self, options: JudgeOptions) -> Mapping[str, Any]:
        s = self._caller.settings
        judge: dict[str, Any] = {
            "model": self._caller.model_name,
            "prompt_version": self._caller.prompt_version(
                options.decoding, checklist=is_checklist(options.criteria), referenced=options.referenced
            ),
            "temperature": s.temperature,
            "reason_max_chars": self._caller.reason_max_chars,
            "parse_retries": s.parse_retries,
            "shuffle_answers": s.shuffle_answers,
        }
        # Added only when not the original behaviour, so fingerprints of judgements made before these
        # options existed still match (fingerprint.py).
        if options.decoding != "group":
            judge["decoding"] = options.decoding
        if self._caller.reason_words:
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
        if self._caller.chat_template_sha256 is not None:
            judge["chat_template"] = self._caller.chat_template_sha256
        if not options.referenced:  # only then: fingerprints of groups with a reference are as before
            judge["reference"] = None
        if options.structured:  # how much of a trajectory the judge sees
            cuts = self._caller.cuts
            judge["trajectory"] = {"result_chars": cuts.result_chars, "max_chars": cuts.answer_chars}
        if options.attribution:  # only then: other fingerprints are as before
            judge["attribution"] = "steps"
        if options.rubric is not None:  # a rubric per prompt: how it is made, not each prompt's items
            return {"judge": judge, "orders": options.orders, "rubric": options.rubric}
        criteria = [criterion_config(c) for c in options.criteria]
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
        reason_language = (
            None
            if options.reason_language is None
            else reason_language_name(options.reason_language, group.conversation_text())
        )
        inline = writes_reasons(options.reasons, group.judgement_id, self._caller.settings.reason_sample_rate)
        prepared = [
            await self._caller.prepare(
                OrderPlan(
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
                    tools=group.tools,
                    attribution=options.attribution,
                )
            )
            for i, order in enumerate(orders)
        ]
        queued = time.perf_counter()
        try:
            async with self._slot():
                admitted = time.perf_counter()
                outcome = await judge_in_orders(self._caller, prepared, answer_ids, criteria)
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
            order_sensitivity=order_sensitivity(outcome.order_parses, criteria, caller_ids),
            thinking=outcome.thinking or None,
            reasons="inline" if inline else "none",
        )
        scoring = Scoring.of(criteria, expected=options.score_from == "expected")
        parsed = outcome.parsed
        grades = {
            a: scoring.grade(
                parsed.marks.get(a),
                failure=parsed.failures.get(a),
                means=outcome.mean_scores.get(a),
                no_expected=outcome.no_expected.get(a),
            )
            for a in answer_ids
        }
        return GroupGrades(grades, run)

    async def explain(self, stored: StoredJudgement, canary: Answer | None) -> ExplainedReasons:
        """Reasons for a marks-only judgement's marks, written now by this judge (explain.py)."""
        self._readiness.check_judging()
        asked = stored.request.reason_language or self._caller.settings.reason_language
        language = reason_language_name(
            asked, Group.of(stored.request, stored.judgement_id).conversation_text()
        )
        async with self._slot():
            return await explain_marks(self._caller, stored, canary, language)
