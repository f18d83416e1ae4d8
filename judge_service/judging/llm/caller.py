"""A group judged in one answer order: render, fit the context, call, parse, retry.

Two decodings of the same judgement, chosen per request (`decoding`) or by JUDGE_DECODING:
- `group`: one engine request whose reply marks every answer. All N x criteria reasons are decoded one
  after the other in a single sequence, so a group's latency is N answers' worth of decoding.
- `per_answer`: N engine requests, one per answer. Each shows the whole group (rubric, conversation,
  reference, every answer in the shown order) and only its last line names the answer to mark, so
  the N prompts share one byte-identical prefix: the engine's prefix cache computes it once and the N
  short replies decode side by side. Every answer is still marked by a judge that saw the whole group.

Every reply must mark what it was asked to; invalid replies are retried, then reported, never zeroed.

Retry policy: a call is made again while any answer it marks is invalid, up to `parse_retries` extra
calls. The attempt with the most valid answers wins (the earliest on ties). In the group decoding all
marks come from that one attempt, so answers in a group are always ranked by the same judge call; in
the per-answer decoding each answer's call retries on its own. Answers still invalid in the winning
attempt are unscored, with the parser's reason.

Thinking judges (thinking.py): a call that thinks reserves its thinking tokens on top of the reply's (the
budget, or JUDGE_THINKING_MAX_TOKENS for `on`); marks are read from the reply after the thinking only
(the backends split it). A call still thinking when its reply stopped is `reasoning_truncated`: retried
once with half the thinking where the backend holds budgets, then its answers are unscored with that
reason. Every attempt's thinking is kept beside its raw output.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from judge_service.backends.base import (
    THINKING_OFF,
    Generation,
    GenerationRequest,
    JudgeBackend,
    ThinkingCall,
)
from judge_service.backends.reasoning_split import neutralise_markers
from judge_service.backends.thinking_profile import ThinkingProfile
from judge_service.config import JudgingSettings, ThinkingSettings
from judge_service.errors import InvalidGroupError, JudgeTimeoutError, NotReadyError, PromptTooLongError
from judge_service.judging.llm.criteria import binary_names
from judge_service.judging.llm.expected import expected_marks
from judge_service.judging.llm.parser import (
    Mark,
    ParsedJudgement,
    answer_schema,
    max_output_tokens,
    output_schema,
    parse_answer,
    parse_judgement,
)
from judge_service.judging.llm.prompt import Decoding, GroupContent, PromptRenderer, RenderedPrompt
from judge_service.judging.llm.thinking import (
    OFF,
    REASONING_TRUNCATED,
    ThinkingMode,
    attempt_record,
    resolve_thinking,
    smaller_budget,
    truncated_note,
)
from judge_service.judging.llm.turns import TrajectoryCuts
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import (
    Answer,
    ChatMessage,
    Criterion,
    Thinking,
    ThinkingAttempt,
    Tool,
    Usage,
)

# Why an answer has no expected marks, when the integer marks had to stand in.
NO_LOGPROBS = "the judge backend returned no log-probabilities"
RENDER_OFF_LOOP_CHARS = 500_000  # an order whose prompts show more than this is rendered in a thread
NOT_ASKED = "log-probabilities are not asked for (JUDGE_MARK_LOGPROBS=0)"
NOT_LOCATED = "the mark's token was not found among the judge's log-probabilities"


@dataclass(frozen=True)
class OrderPlan:
    """What one answer order's judge call(s) are rendered from: the group's content in the order shown,
    and how the judge is asked (decoding, reason language, thinking, reasons or marks only)."""

    conversation: list[ChatMessage]
    reference: str | None  # None: a group without a reference
    answers: list[Answer]  # in the order the judge sees them
    criteria: list[Criterion]
    request_id: str
    group_id: str | None = None
    decoding: Decoding = "group"
    reason_language: str | None = None  # a language's name, written into the prompt
    thinking: ThinkingMode = OFF
    # An answer (a canary) that the per-answer decoding shows only in its own prompt, so the other
    # answers are marked as if it were not there; one group prompt shows it to all.
    alone: str | None = None
    reasons: bool = True  # False asks for marks only (parser.py)
    tools: Sequence[Tool] | None = None  # the tools the policy saw, shown once (turns.py)
    attribution: bool = False  # each mark names the steps it rests on (parser.attribution_schema)

    @functools.cached_property
    def steps(self) -> dict[str, int] | None:
        """Answer id -> its number of steps (a trajectory's turns; 0 for text) with attribution, else None.
        Worked out once per order: every call of a per-answer order asks for it."""
        if not self.attribution:
            return None
        return {a.id: 0 if a.messages is None else len(a.messages) for a in self.answers}


@dataclass(frozen=True)
class JudgeCall:
    """One engine request of an order and the answers its reply marks (all shown, or the one)."""

    request: GenerationRequest
    answer_ids: tuple[str, ...]
    per_answer: bool = False  # the reply is one answer's criteria object
    reasons: bool = True  # the reply holds a reason before each mark; False: marks only
    binary: frozenset[str] = frozenset()  # the checklist items: "met" where the others hold "mark"
    referenced: bool = True  # False: the group has no reference (the no_reference/ prompts)
    steps: Mapping[str, int] | None = None  # attribution: answer id -> its number of steps


@dataclass
class JudgeOutcome:
    parsed: ParsedJudgement
    prompt_version: str
    raw_outputs: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    judge_ms: float = 0.0
    # Set when the group was judged under several answer orders (orders.py): each order's
    # winning parse, and answer id -> criterion -> mean 0-1 score over the orders.
    order_parses: list[ParsedJudgement] = field(default_factory=list)
    mean_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    # Answer id -> why its marks have no expected values (NO_LOGPROBS, ...), for answers without them.
    no_expected: dict[str, str] = field(default_factory=dict)
    # One entry per attempt (beside raw_outputs) when the calls thought; empty otherwise.
    thinking: list[ThinkingAttempt] = field(default_factory=list)

    def add_costs(self, other: JudgeOutcome) -> None:
        """Count another call's (or order's) raw outputs and tokens into this one, and why its answers
        have no expected marks (the first reason given is kept)."""
        for answer_id, why in other.no_expected.items():
            self.no_expected.setdefault(answer_id, why)
        self.raw_outputs.extend(other.raw_outputs)
        self.thinking.extend(other.thinking)
        self.usage.prompt_tokens += other.usage.prompt_tokens
        self.usage.completion_tokens += other.usage.completion_tokens
        self.usage.judge_calls += other.usage.judge_calls
        self.usage.reasoning_tokens += other.usage.reasoning_tokens


async def gather_outcomes(judging: Iterable[Awaitable[JudgeOutcome]]) -> list[JudgeOutcome]:
    """Run judge calls (or orders) together; the first error fails them all, as one call's would."""
    results = await asyncio.gather(*judging, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]
    return [r for r in results if isinstance(r, JudgeOutcome)]


class JudgeCaller:
    """The LLM judge's calls to its backend, under the judging and thinking slices of the settings
    (`Settings` itself for the service's judge and each juror; the slices alone in tests)."""

    def __init__(
        self,
        backend: JudgeBackend,
        renderer: PromptRenderer,
        metrics: JudgeMetrics,
        settings: JudgingSettings,
        thinking: ThinkingSettings,
    ) -> None:
        self._backend = backend
        self._renderer = renderer
        self._metrics = metrics
        self._settings = settings
        self._thinking = thinking
        # The defaults that follow the judge (embedded or chosen) and the chat template's file, resolved
        # once: the defaults of requests that name none (judge.py), and part of the fingerprint.
        self.reason_max_chars = settings.resolved_reason_max_chars()
        self.cuts = TrajectoryCuts(settings.trajectory_result_chars, settings.trajectory_max_chars)
        self.reason_words = settings.resolved_reason_words()
        self.decoding: Decoding = settings.resolved_decoding()
        self.default_thinking = thinking.resolved_thinking()
        self.chat_template_sha256 = thinking.chat_template_sha256()

    @classmethod
    def configured(
        cls,
        backend: JudgeBackend,
        metrics: JudgeMetrics,
        settings: JudgingSettings,
        thinking: ThinkingSettings,
    ) -> JudgeCaller:
        """The caller the settings describe, with their prompt templates: the service's judge (app.py),
        and each judge of a jury with the settings its entry overrides (judging/jury/build.py)."""
        renderer = PromptRenderer(settings.resolved_prompts_dir(), settings.prompt_template)
        return cls(backend, renderer, metrics, settings, thinking)

    @property
    def model_name(self) -> str:
        return self._backend.model_name

    @property
    def settings(self) -> JudgingSettings:
        return self._settings

    @property
    def thinking_profile(self) -> ThinkingProfile:
        profile = self._backend.thinking_profile
        if profile is None:
            raise NotReadyError("the judge engine is not loaded yet")
        return profile

    def thinking_mode(self, asked: Thinking | None, effort: str | None) -> ThinkingMode:
        """A request's thinking, checked against the judge (thinking.resolve_thinking)."""
        return resolve_thinking(
            asked,
            effort,
            default=self.default_thinking,
            default_effort=self._thinking.reasoning_effort,
            profile=self.thinking_profile,
            model=self.model_name,
        )

    @property
    def renderer(self) -> PromptRenderer:
        return self._renderer

    @property
    def max_context_tokens(self) -> int | None:
        return self._backend.max_context_tokens

    async def count_prompt_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """A prompt's tokens as the judge counts them (thinking off); None where it cannot tell."""
        return await self._backend.count_prompt_tokens(messages, THINKING_OFF)

    def prompt_version(
        self, decoding: Decoding, *, reasons: bool = True, checklist: bool = False, referenced: bool = True
    ) -> str:
        return self._renderer.version_of(
            decoding, reasons=reasons, checklist=checklist, referenced=referenced
        )

    def check_reference_free(self, decoding: Decoding, *, reasons: bool, checklist: bool) -> None:
        """422 where the prompt template cannot judge a group without a reference in this decoding."""
        try:
            self._renderer.version_of(decoding, reasons=reasons, checklist=checklist, referenced=False)
        except FileNotFoundError as exc:
            raise InvalidGroupError(str(exc), details={"reference": None}) from None

    def check_decoding(self, decoding: Decoding) -> None:
        try:
            self._renderer.version_of(decoding)
        except FileNotFoundError as exc:
            raise InvalidGroupError(
                f"decoding {decoding!r} is not available: {exc}; use decoding 'group'",
                details={"decoding": decoding},
            ) from None

    def check_marks_only(self, decoding: Decoding) -> None:
        try:
            self._renderer.version_of(decoding, reasons=False)
        except FileNotFoundError as exc:
            raise InvalidGroupError(
                f"reasons 'none' is not available with this prompt template: {exc}; use reasons 'inline'",
                details={"reasons": "none", "decoding": decoding},
            ) from None

    def content(
        self,
        conversation: list[ChatMessage],
        reference: str | None,
        answers: list[Answer],
        criteria: list[Criterion],
        reason_language: str | None,
        tools: Sequence[Tool] | None,
        *,
        attribution: bool = False,
    ) -> GroupContent:
        """A group as its prompts show it, with the judge's thinking markers broken in every caller text
        (texts, and every part of a trajectory), so that no answer can end the judge's thinking."""
        profile = self._backend.thinking_profile
        clean = None
        if profile is not None and profile.thinks:
            conversation, reference, answers = _without_markers(conversation, reference, answers, profile)
            clean = functools.partial(neutralise_markers, markers=profile.markers())
        return GroupContent(
            conversation,
            reference,
            answers,
            criteria,
            self.reason_max_chars,
            reason_language,
            tools=tools,
            cuts=self.cuts,
            clean=clean,
            attribution=attribution,
        )

    async def prepare(self, plan: OrderPlan) -> list[JudgeCall]:
        """Render one order's call(s) and check each fits the judge's context window (before queueing)."""
        criteria = plan.criteria
        ids = [a.id for a in plan.answers]
        group = self.content(
            plan.conversation,
            plan.reference,
            plan.answers,
            criteria,
            plan.reason_language,
            plan.tools,
            attribution=plan.attribution,
        )
        names = [c.name for c in criteria]
        binary = binary_names(criteria)
        reasons = plan.reasons
        # A large group's prompts are rendered in a thread: per answer, each prompt holds the whole group,
        # and building them would hold the event loop (and every other request) for seconds.
        off_loop = group.size * (1 if plan.decoding == "group" else len(ids)) > RENDER_OFF_LOOP_CHARS
        if plan.decoding == "group":
            if off_loop:
                prompt = await asyncio.to_thread(self._renderer.render, group, reasons=reasons)
            else:
                prompt = self._renderer.render(group, reasons=reasons)
            schema = output_schema(
                ids,
                names,
                self.reason_max_chars,
                reason_words=self.reason_words,
                reasons=reasons,
                binary=binary,
                steps=plan.steps,
            )
            return [await self._call(plan, prompt, schema, ids, plan.request_id)]
        if off_loop:
            prompts = await asyncio.to_thread(self._per_answer_prompts, group, plan)
        else:
            prompts = self._per_answer_prompts(group, plan)
        steps = plan.steps

        def schema_of(answer_id: str) -> dict[str, Any]:  # one for all answers, or per answer's steps
            return answer_schema(
                names,
                self.reason_max_chars,
                reason_words=self.reason_words,
                reasons=reasons,
                binary=binary,
                steps=None if steps is None else steps[answer_id],
            )

        shared = schema_of(ids[0]) if steps is None else None
        calls = [
            (prompt, answer_id, f"{plan.request_id}-a{k}")
            for k, (prompt, answer_id) in enumerate(zip(prompts, ids, strict=True))
        ]
        # The first prompt is checked against the context alone: the others hold the same group, so a
        # group too long for the judge is refused after one count, not after one per answer.
        (prompt, answer_id, request_id), rest = calls[0], calls[1:]
        first = await self._call(
            plan, prompt, shared or schema_of(answer_id), [answer_id], request_id, answer_id
        )
        others = await asyncio.gather(
            *(self._call(plan, p, shared or schema_of(a), [a], r, a) for p, a, r in rest)
        )
        return [first, *others]

    def _per_answer_prompts(self, group: GroupContent, plan: OrderPlan) -> list[RenderedPrompt]:
        """One prompt per answer; an answer shown alone (plan.alone, a canary) is left out of the others'."""
        prompts = self._renderer.render_per_answer(group, reasons=plan.reasons)
        if plan.alone is None:
            return prompts
        others = replace(group, answers=[a for a in group.answers if a.id != plan.alone])
        without = iter(self._renderer.render_per_answer(others, reasons=plan.reasons))
        ids = [a.id for a in group.answers]
        return [prompt if i == plan.alone else next(without) for prompt, i in zip(prompts, ids, strict=True)]

    async def _call(
        self,
        plan: OrderPlan,
        prompt: RenderedPrompt,
        schema: dict[str, object],
        answer_ids: list[str],
        request_id: str,
        answer_id: str | None = None,
    ) -> JudgeCall:
        """One engine request: `answer_id` set where the prompt shows that answer alone."""
        s = self._settings
        thinking, reasons, n_criteria = plan.thinking, plan.reasons, len(plan.criteria)
        n_answers = len(answer_ids)
        attribution = plan.attribution
        usual = max_output_tokens(
            n_answers, n_criteria, self.reason_max_chars, reasons=reasons, attribution=attribution
        )
        reply_tokens = max_output_tokens(
            n_answers,
            n_criteria,
            self.reason_max_chars,
            chars_per_token=1,
            reasons=reasons,
            attribution=attribution,
        )
        # Thinking tokens count inside max_tokens: a budget must fit whole; `on` gets what is left of its cap.
        reserved = thinking.budget or 0
        thinks = thinking.call(self._thinking.thinking_min_tokens)
        max_tokens = reply_tokens + (
            thinking.budget or (self._thinking.thinking_max_tokens if thinking.enabled else 0)
        )
        limit = self._backend.max_context_tokens
        if limit is not None:
            prompt_tokens = await self._backend.count_prompt_tokens(prompt.messages, thinks)
            if prompt_tokens is not None:
                if prompt_tokens + usual + reserved > limit:
                    thought = f" + {reserved} for its thinking" if reserved else ""
                    raise PromptTooLongError(
                        f"the group needs {prompt_tokens} prompt tokens + {usual} for the judge's reply"
                        f"{thought}, over the judge's context of {limit} tokens; send fewer or shorter "
                        "answers"
                        + (", or a rubric of fewer items" if n_criteria > 4 else "")
                        + (", or a smaller thinking budget" if reserved else ""),
                        details={
                            "prompt_tokens": prompt_tokens,
                            "reply_tokens": usual,
                            "thinking_tokens": reserved,
                            "limit": limit,
                        },
                    )
                # The worst-case budget where it fits; else what the context leaves (>= usual).
                max_tokens = min(max_tokens, limit - prompt_tokens)
        request = GenerationRequest(
            messages=prompt.messages,
            max_tokens=max_tokens,
            json_schema=schema,
            temperature=s.temperature,
            seed=0,
            request_id=request_id,
            group_id=plan.group_id,
            answer_id=answer_id,
            top_logprobs=s.mark_logprobs,
            thinking=thinks,
        )
        binary = binary_names(plan.criteria)
        per_answer = answer_id is not None
        steps = plan.steps
        return JudgeCall(
            request,
            tuple(answer_ids),
            per_answer=per_answer,
            reasons=reasons,
            binary=binary,
            referenced=plan.reference is not None,
            steps=None if steps is None else {a: steps[a] for a in answer_ids},
        )

    async def judge_order(self, calls: list[JudgeCall], criteria: list[str]) -> JudgeOutcome:
        """One order's call(s), concurrently, merged into one outcome. A call's error fails the order:
        the other answers' marks alone would be one-sided."""
        if len(calls) == 1:
            return await self.judge(calls[0], criteria)
        started = time.perf_counter()
        outcomes = await gather_outcomes(self.judge(c, criteria) for c in calls)
        merged = JudgeOutcome(parsed=ParsedJudgement(), prompt_version=self._version(calls[0]))
        for outcome in outcomes:  # each call marks other answers: their parses add up
            merged.parsed.marks.update(outcome.parsed.marks)
            merged.parsed.failures.update(outcome.parsed.failures)
            merged.parsed.problems |= outcome.parsed.problems
            merged.parsed.notes.extend(n for n in outcome.parsed.notes if n not in merged.parsed.notes)
            merged.add_costs(outcome)
        merged.judge_ms = (time.perf_counter() - started) * 1000  # wall clock: the calls ran together
        return merged

    def _version(self, call: JudgeCall) -> str:
        decoding: Decoding = "per_answer" if call.per_answer else "group"
        return self._renderer.version_of(
            decoding, reasons=call.reasons, checklist=bool(call.binary), referenced=call.referenced
        )

    async def judge(self, call: JudgeCall, criteria: list[str]) -> JudgeOutcome:
        """One call, retried while its reply leaves an answer invalid (module docstring)."""
        s = self._settings
        answer_ids = list(call.answer_ids)
        outcome = JudgeOutcome(parsed=ParsedJudgement(), prompt_version=self._version(call))
        best: ParsedJudgement | None = None
        best_reply: Generation | None = None
        started = time.perf_counter()
        thinking = call.request.thinking
        truncated_once = False
        try:
            async with asyncio.timeout(s.group_deadline_s):
                # Invalid replies use up parse_retries; a truncated thinking gets its one retry on top.
                invalid_left, attempt, retry_reason = s.parse_retries, 0, None
                while True:
                    if retry_reason is not None:
                        self._metrics.retries.labels(reason=retry_reason).inc()
                    request = replace(
                        call.request, request_id=f"{call.request.request_id}-{attempt}", thinking=thinking
                    )
                    attempt += 1
                    reply = await self._backend.generate(request)
                    self._count_reply(reply, outcome, thinking)
                    if not reply.reasoning_ended:
                        self._metrics.reasoning_truncated.inc()
                        if best is None:
                            best, best_reply = _unreplied(answer_ids, truncated_note(reply, thinking)), reply
                        # One retry, with half the thinking, where the backend can hold it to that.
                        if truncated_once or not self.thinking_profile.enforces_budget:
                            break
                        truncated_once, retry_reason = True, REASONING_TRUNCATED
                        thinking = replace(
                            thinking, budget=smaller_budget(reply, thinking, request.max_tokens)
                        )
                        continue
                    parsed = self.parse(reply.text, call, criteria)
                    if reply.finish_reason == "length" and not parsed.complete:
                        parsed.notes.append("the judge's reply was cut off at the output token limit")
                        parsed.problems.add("truncated")
                    if not parsed.complete:
                        self._metrics.parse_failures.inc()
                    for kind in sorted(parsed.problems):
                        self._metrics.output_problems.labels(kind=kind).inc()
                    if (
                        best is None
                        or len(parsed.marks) > len(best.marks)
                        or not best_reply_ended(best_reply)
                    ):
                        best, best_reply = parsed, reply
                    if parsed.complete or invalid_left == 0:
                        break
                    invalid_left, retry_reason = invalid_left - 1, "invalid_output"
        except TimeoutError as exc:
            if best is None:
                raise JudgeTimeoutError(
                    f"the judge did not answer within the group deadline of {s.group_deadline_s:g} s",
                    details={"deadline_s": s.group_deadline_s, "attempts": outcome.usage.judge_calls},
                ) from exc
            best.notes.append(f"retries stopped by the group deadline of {s.group_deadline_s:g} s")
        outcome.judge_ms = (time.perf_counter() - started) * 1000
        if best is not None and best_reply is not None:
            outcome.no_expected = self._add_expected(best, best_reply, call)
            outcome.parsed = _with_notes(best)
        self._metrics.prompt_tokens.inc(outcome.usage.prompt_tokens)
        self._metrics.completion_tokens.inc(outcome.usage.completion_tokens)
        return outcome

    async def generate(self, request: GenerationRequest) -> Generation:
        """One engine request as it is (reasons written afterwards, explain.py), counted in the metrics."""
        reply = await self._backend.generate(request)
        self._metrics.judge_replies.inc()
        self._metrics.prompt_tokens.inc(reply.prompt_tokens)
        self._metrics.completion_tokens.inc(reply.completion_tokens)
        return reply

    def parse(self, text: str, call: JudgeCall, criteria: list[str]) -> ParsedJudgement:
        """A reply to `call`, as the call asked for it (one answer or many; with reasons or marks only)."""
        limit, reasons, binary, steps = self.reason_max_chars, call.reasons, call.binary, call.steps
        if call.per_answer:
            answer_id = call.answer_ids[0]
            count = None if steps is None else steps[answer_id]
            return parse_answer(text, answer_id, criteria, limit, reasons=reasons, binary=binary, steps=count)
        ids = list(call.answer_ids)
        return parse_judgement(text, ids, criteria, limit, reasons=reasons, binary=binary, steps=steps)

    def _count_reply(self, reply: Generation, outcome: JudgeOutcome, thinking: ThinkingCall) -> None:
        """One attempt into the outcome's raw outputs, thinking records and usage, and the metrics."""
        self._metrics.judge_replies.inc()
        outcome.raw_outputs.append(reply.text)
        outcome.usage.prompt_tokens += reply.prompt_tokens
        outcome.usage.completion_tokens += reply.completion_tokens
        outcome.usage.judge_calls += 1
        if not (thinking.enabled or reply.reasoning is not None or reply.misrouted):
            return
        record = attempt_record(
            reply,
            thinking,
            keep_text=self._thinking.store_thinking,
            max_chars=self._thinking.store_thinking_chars,
        )
        outcome.thinking.append(record)
        outcome.usage.reasoning_tokens += reply.reasoning_tokens or 0
        mode = "budget" if thinking.budget is not None else "on"
        if reply.reasoning_tokens is not None:
            self._metrics.thinking_tokens.labels(mode=mode).observe(reply.reasoning_tokens)
        if record.budget_exhausted:
            self._metrics.thinking_budget_exhausted.inc()
        if reply.misrouted:
            self._metrics.reasoning_misrouted.inc()

    def _add_expected(self, parsed: ParsedJudgement, reply: Generation, call: JudgeCall) -> dict[str, str]:
        """Set each mark's expected value from the reply's log-probabilities; answer id -> why not, for
        answers where any mark lacks one (they keep None and are scored from their integer marks)."""
        if self._settings.mark_logprobs <= 0:
            return dict.fromkeys(parsed.marks, NOT_ASKED)
        if reply.logprobs is None:
            return dict.fromkeys(parsed.marks, NO_LOGPROBS)
        found = expected_marks(reply.logprobs, bare=not call.reasons, document=parsed.document)
        missing: dict[str, str] = {}
        for answer_id, marks in parsed.marks.items():
            for name, mark in marks.items():
                value = found.get((name,) if call.per_answer else (answer_id, name))
                if value is None:
                    missing[answer_id] = NOT_LOCATED
                else:
                    marks[name] = Mark(mark.mark, mark.reason, round(value, 6), mark.steps, mark.first_wrong)
        return missing


def _with_notes(parsed: ParsedJudgement) -> ParsedJudgement:
    """Unscored answers carry the reply-wide notes too (cut off, deadline): the caller sees why."""
    if parsed.notes:
        suffix = "; ".join(parsed.notes)
        parsed.failures = {k: f"{reason} ({suffix})" for k, reason in parsed.failures.items()}
    return parsed


def best_reply_ended(reply: Generation | None) -> bool:
    """A reply that ended its thinking beats one that did not, whatever their marks."""
    return reply is None or reply.reasoning_ended


def _unreplied(answer_ids: list[str], why: str) -> ParsedJudgement:
    """A call that gave no reply to parse: every answer it marks fails with `why`."""
    parsed = ParsedJudgement()
    parsed.failures = dict.fromkeys(answer_ids, why)
    parsed.problems.add(REASONING_TRUNCATED)
    return parsed


def _without_markers(
    conversation: list[ChatMessage], reference: str | None, answers: list[Answer], profile: ThinkingProfile
) -> tuple[list[ChatMessage], str | None, list[Answer]]:
    """The group's texts with the judge's thinking markers broken (reasoning_split.neutralise_markers):
    no answer can end the judge's thinking. Texts without a marker are kept as they are."""
    markers = profile.markers()

    def message(m: ChatMessage) -> ChatMessage:
        text = neutralise_markers(m.content, markers)
        return m if text == m.content else m.model_copy(update={"content": text})

    def answer(a: Answer) -> Answer:
        text = neutralise_markers(a.text, markers)
        return a if text == a.text else a.model_copy(update={"text": text})

    return (
        [message(m) for m in conversation],
        None if reference is None else neutralise_markers(reference, markers),
        [answer(a) for a in answers],
    )
