"""One judge call of a group in one answer order: render, fit the context, call, parse, retry.

The reply must mark every answer; invalid replies are retried, then reported, never zeroed.

Retry policy: the group is judged again while any answer's entry is invalid, up to `parse_retries`
extra calls. The attempt with the most valid answers wins (the earliest on ties), and all marks come
from that one attempt, so answers in a group are always ranked by the same judge call. Answers still
invalid in the winning attempt are unscored, with the parser's reason.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from judge_service.backends.base import GenerationRequest, JudgeBackend
from judge_service.errors import JudgeTimeoutError, PromptTooLongError
from judge_service.judging.llm.parser import (
    ParsedJudgement,
    max_output_tokens,
    output_schema,
    parse_judgement,
)
from judge_service.judging.llm.prompt import PromptRenderer
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import Answer, ChatMessage, Criterion, Usage


@dataclass(frozen=True)
class JudgeSettings:
    temperature: float = 0.0
    reason_max_chars: int = 120
    parse_retries: int = 2
    deadline_s: float = 300.0
    shuffle_answers: bool = True  # show answers in a seeded shuffled order (orders.py)


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
    def prompt_version(self) -> str:
        return self._renderer.version

    @property
    def settings(self) -> JudgeSettings:
        return self._settings

    async def prepare(
        self,
        *,
        conversation: list[ChatMessage],
        reference: str,
        answers: list[Answer],
        criteria: list[Criterion],
        request_id: str,
        group_id: str | None = None,
    ) -> GenerationRequest:
        """Render the group and check it fits the judge's context window (before queueing for it)."""
        s = self._settings
        prompt = self._renderer.render(
            conversation=conversation,
            reference=reference,
            answers=answers,
            criteria=criteria,
            reason_max_chars=s.reason_max_chars,
        )
        ids = [a.id for a in answers]
        names = [c.name for c in criteria]
        usual = max_output_tokens(len(ids), len(names), s.reason_max_chars)
        max_tokens = max_output_tokens(len(ids), len(names), s.reason_max_chars, chars_per_token=1)
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
            json_schema=output_schema(ids, names, s.reason_max_chars),
            temperature=s.temperature,
            seed=0,
            request_id=request_id,
            group_id=group_id,
        )

    async def judge(
        self, generation: GenerationRequest, answer_ids: list[str], criteria: list[str]
    ) -> JudgeOutcome:
        s = self._settings
        outcome = JudgeOutcome(parsed=ParsedJudgement(), prompt_version=self._renderer.version)
        best: ParsedJudgement | None = None
        started = time.perf_counter()
        try:
            async with asyncio.timeout(s.deadline_s):
                for attempt in range(s.parse_retries + 1):
                    if attempt:
                        self._metrics.retries.labels(reason="invalid_output").inc()
                    request = replace(generation, request_id=f"{generation.request_id}-{attempt}")
                    reply = await self._backend.generate(request)
                    self._metrics.judge_replies.inc()
                    outcome.raw_outputs.append(reply.text)
                    outcome.usage.prompt_tokens += reply.prompt_tokens
                    outcome.usage.completion_tokens += reply.completion_tokens
                    outcome.usage.judge_calls += 1
                    parsed = parse_judgement(reply.text, answer_ids, criteria, s.reason_max_chars)
                    if reply.finish_reason == "length" and not parsed.complete:
                        parsed.notes.append("the judge's reply was cut off at the output token limit")
                        parsed.problems.add("truncated")
                    if not parsed.complete:
                        self._metrics.parse_failures.inc()
                    for kind in sorted(parsed.problems):
                        self._metrics.output_problems.labels(kind=kind).inc()
                    if best is None or len(parsed.marks) > len(best.marks):
                        best = parsed
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
        outcome.parsed = _with_notes(best) if best is not None else outcome.parsed
        self._metrics.prompt_tokens.inc(outcome.usage.prompt_tokens)
        self._metrics.completion_tokens.inc(outcome.usage.completion_tokens)
        return outcome


def _with_notes(parsed: ParsedJudgement) -> ParsedJudgement:
    """Unscored answers carry the reply-wide notes too (cut off, deadline): the caller sees why."""
    if parsed.notes:
        suffix = "; ".join(parsed.notes)
        parsed.failures = {k: f"{reason} ({suffix})" for k, reason in parsed.failures.items()}
    return parsed
