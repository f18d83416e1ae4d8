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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field, replace

from judge_service.backends.base import Generation, GenerationRequest, JudgeBackend
from judge_service.errors import InvalidGroupError, JudgeTimeoutError, PromptTooLongError
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
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import Answer, ChatMessage, Criterion, ScoreFrom, Usage


@dataclass(frozen=True)
class JudgeSettings:
    temperature: float = 0.0
    reason_max_chars: int = 120
    parse_retries: int = 2
    deadline_s: float = 300.0
    shuffle_answers: bool = True  # show answers in a seeded shuffled order (orders.py)
    decoding: Decoding = "group"  # the default of requests that name none (module docstring)
    score_from: ScoreFrom = "mark"  # the default of requests that name none (judge.py)
    reason_words: bool = False  # constrain reasons to words (parser.reason_words_pattern)
    reason_language: str | None = None  # the default of requests that name none (judge.py)
    # Alternatives asked per generated token, for expected marks (expected.py); 0: not asked.
    mark_logprobs: int = 10


# Why an answer has no expected marks, when the integer marks had to stand in.
NO_LOGPROBS = "the judge backend returned no log-probabilities"
NOT_ASKED = "log-probabilities are not asked for (JUDGE_MARK_LOGPROBS=0)"
NOT_LOCATED = "the mark's token was not found among the judge's log-probabilities"


@dataclass(frozen=True)
class JudgeCall:
    """One engine request of an order and the answers its reply marks (all shown, or the one)."""

    request: GenerationRequest
    answer_ids: tuple[str, ...]
    per_answer: bool = False  # the reply is one answer's criteria object


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

    def add_costs(self, other: JudgeOutcome) -> None:
        """Count another call's (or order's) raw outputs and tokens into this one, and why its answers
        have no expected marks (the first reason given is kept)."""
        for answer_id, why in other.no_expected.items():
            self.no_expected.setdefault(answer_id, why)
        self.raw_outputs.extend(other.raw_outputs)
        self.usage.prompt_tokens += other.usage.prompt_tokens
        self.usage.completion_tokens += other.usage.completion_tokens
        self.usage.judge_calls += other.usage.judge_calls


async def gather_outcomes(judging: Iterable[Awaitable[JudgeOutcome]]) -> list[JudgeOutcome]:
    """Run judge calls (or orders) together; the first error fails them all, as one call's would."""
    results = await asyncio.gather(*judging, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]
    return [r for r in results if isinstance(r, JudgeOutcome)]


class JudgeCaller:
    def __init__(
        self,
        backend: JudgeBackend,
        renderer: PromptRenderer,
        metrics: JudgeMetrics,
        settings: JudgeSettings,
    ) -> None:
        self._backend = backend
        self._renderer = renderer
        self._metrics = metrics
        self._settings = settings

    @property
    def model_name(self) -> str:
        return self._backend.model_name

    @property
    def settings(self) -> JudgeSettings:
        return self._settings

    def prompt_version(self, decoding: Decoding) -> str:
        return self._renderer.version_of(decoding)

    def check_decoding(self, decoding: Decoding) -> None:
        try:
            self._renderer.version_of(decoding)
        except FileNotFoundError as exc:
            raise InvalidGroupError(
                f"decoding {decoding!r} is not available: {exc}; use decoding 'group'",
                details={"decoding": decoding},
            ) from None

    async def prepare(
        self,
        *,
        conversation: list[ChatMessage],
        reference: str,
        answers: list[Answer],
        criteria: list[Criterion],
        request_id: str,
        group_id: str | None = None,
        decoding: Decoding = "group",
        reason_language: str | None = None,
    ) -> list[JudgeCall]:
        """Render one order's call(s) and check each fits the judge's context window (before queueing)."""
        s = self._settings
        names = [c.name for c in criteria]
        ids = [a.id for a in answers]
        group = GroupContent(conversation, reference, answers, criteria, s.reason_max_chars, reason_language)
        if decoding == "group":
            prompt = self._renderer.render(group)
            schema = output_schema(ids, names, s.reason_max_chars, reason_words=s.reason_words)
            request = await self._request(prompt, schema, len(ids), len(names), request_id, group_id, None)
            return [JudgeCall(request, tuple(ids))]
        prompts = self._renderer.render_per_answer(group)
        schema = answer_schema(names, s.reason_max_chars, reason_words=s.reason_words)
        requests = await asyncio.gather(
            *(
                self._request(prompt, schema, 1, len(names), f"{request_id}-a{k}", group_id, answer_id)
                for k, (prompt, answer_id) in enumerate(zip(prompts, ids, strict=True))
            )
        )
        return [
            JudgeCall(r, (answer_id,), per_answer=True) for r, answer_id in zip(requests, ids, strict=True)
        ]

    async def _request(
        self,
        prompt: RenderedPrompt,
        schema: dict[str, object],
        n_answers: int,
        n_criteria: int,
        request_id: str,
        group_id: str | None,
        answer_id: str | None,
    ) -> GenerationRequest:
        s = self._settings
        usual = max_output_tokens(n_answers, n_criteria, s.reason_max_chars)
        max_tokens = max_output_tokens(n_answers, n_criteria, s.reason_max_chars, chars_per_token=1)
        limit = self._backend.max_context_tokens
        if limit is not None:
            prompt_tokens = await self._backend.count_prompt_tokens(prompt.messages)
            if prompt_tokens is not None:
                if prompt_tokens + usual > limit:
                    raise PromptTooLongError(
                        f"the group needs {prompt_tokens} prompt tokens + {usual} for the judge's reply, "
                        f"over the judge's context of {limit} tokens; send fewer or shorter answers",
                        details={"prompt_tokens": prompt_tokens, "reply_tokens": usual, "limit": limit},
                    )
                # The worst-case budget where it fits; else what the context leaves (>= usual).
                max_tokens = min(max_tokens, limit - prompt_tokens)
        return GenerationRequest(
            messages=prompt.messages,
            max_tokens=max_tokens,
            json_schema=schema,
            temperature=s.temperature,
            seed=0,
            request_id=request_id,
            group_id=group_id,
            answer_id=answer_id,
            top_logprobs=s.mark_logprobs,
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
        return self._renderer.version_of("per_answer" if call.per_answer else "group")

    async def judge(self, call: JudgeCall, criteria: list[str]) -> JudgeOutcome:
        """One call, retried while its reply leaves an answer invalid (module docstring)."""
        s = self._settings
        answer_ids = list(call.answer_ids)
        outcome = JudgeOutcome(parsed=ParsedJudgement(), prompt_version=self._version(call))
        best: ParsedJudgement | None = None
        best_reply: Generation | None = None
        started = time.perf_counter()
        try:
            async with asyncio.timeout(s.deadline_s):
                for attempt in range(s.parse_retries + 1):
                    if attempt:
                        self._metrics.retries.labels(reason="invalid_output").inc()
                    request = replace(call.request, request_id=f"{call.request.request_id}-{attempt}")
                    reply = await self._backend.generate(request)
                    self._metrics.judge_replies.inc()
                    outcome.raw_outputs.append(reply.text)
                    outcome.usage.prompt_tokens += reply.prompt_tokens
                    outcome.usage.completion_tokens += reply.completion_tokens
                    outcome.usage.judge_calls += 1
                    if call.per_answer:
                        parsed = parse_answer(reply.text, answer_ids[0], criteria, s.reason_max_chars)
                    else:
                        parsed = parse_judgement(reply.text, answer_ids, criteria, s.reason_max_chars)
                    if reply.finish_reason == "length" and not parsed.complete:
                        parsed.notes.append("the judge's reply was cut off at the output token limit")
                        parsed.problems.add("truncated")
                    if not parsed.complete:
                        self._metrics.parse_failures.inc()
                    for kind in sorted(parsed.problems):
                        self._metrics.output_problems.labels(kind=kind).inc()
                    if best is None or len(parsed.marks) > len(best.marks):
                        best, best_reply = parsed, reply
                    if parsed.complete:
                        break
        except TimeoutError as exc:
            if best is None:
                raise JudgeTimeoutError(
                    f"the judge did not answer within the group deadline of {s.deadline_s:g} s",
                    details={"deadline_s": s.deadline_s, "attempts": outcome.usage.judge_calls},
                ) from exc
            best.notes.append(f"retries stopped by the group deadline of {s.deadline_s:g} s")
        outcome.judge_ms = (time.perf_counter() - started) * 1000
        if best is not None and best_reply is not None:
            outcome.no_expected = self._add_expected(best, best_reply, call)
            outcome.parsed = _with_notes(best)
        self._metrics.prompt_tokens.inc(outcome.usage.prompt_tokens)
        self._metrics.completion_tokens.inc(outcome.usage.completion_tokens)
        return outcome

    def _add_expected(self, parsed: ParsedJudgement, reply: Generation, call: JudgeCall) -> dict[str, str]:
        """Set each mark's expected value from the reply's log-probabilities; answer id -> why not, for
        answers where any mark lacks one (they keep None and are scored from their integer marks)."""
        if self._settings.mark_logprobs <= 0:
            return dict.fromkeys(parsed.marks, NOT_ASKED)
        if reply.logprobs is None:
            return dict.fromkeys(parsed.marks, NO_LOGPROBS)
        found = expected_marks(reply.logprobs)
        missing: dict[str, str] = {}
        for answer_id, marks in parsed.marks.items():
            prefix = () if call.per_answer else (answer_id,)
            for name, mark in marks.items():
                value = found.get((*prefix, name))
                if value is None:
                    missing[answer_id] = NOT_LOCATED
                else:
                    marks[name] = Mark(mark.mark, mark.reason, round(value, 6))
        return missing


def _with_notes(parsed: ParsedJudgement) -> ParsedJudgement:
    """Unscored answers carry the reply-wide notes too (cut off, deadline): the caller sees why."""
    if parsed.notes:
        suffix = "; ".join(parsed.notes)
        parsed.failures = {k: f"{reason} ({suffix})" for k, reason in parsed.failures.items()}
    return parsed
