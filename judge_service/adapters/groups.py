"""What every trainer adapter does with a batch: turn prompts and completions into judge groups, and the
judge's replies back into one result per completion, in the trainer's order.

Groups: consecutive completions of one prompt. With `group_ids` (the trainer's own id of each completion's
prompt) runs of equal ids are groups. With `num_generations` the batch is cut every that many completions
and each cut must hold one prompt, else the group arrived split (several processes each got part of it)
and the batch is refused with how to fix it; without either, runs of equal prompts are groups.
Messages keep their roles, tool calls and results (turns.py); a completion given as chat messages is an
answer's turns where the adapter sends them, else their text; C0 control characters are
removed (the service refuses them; a policy under training can emit them). A group the service would
refuse (a text over its size limit, say) is not sent: its completions are unscored with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError

from judge_service.client import AsyncJudgeClient, JudgeClient, RetryPolicy
from judge_service.schemas import (
    AnswerResult,
    BatchItem,
    Criterion,
    CriterionMark,
    JudgeRequest,
    JudgeResponse,
    MemberRequest,
)

from .text import clean as clean  # the adapters import them from here too
from .text import content_text as content_text
from .turns import as_turns

log = logging.getLogger("judge_service.adapters")

CHUNK_GROUPS = 32  # groups per POST /v1/judge/batch; chunks are sent concurrently


class SplitGroupError(ValueError):
    """A group arrived split across reward calls (multi-process training): judging part of a group would
    rank its answers against the wrong siblings."""


def reference_of(value: Any) -> str | None:
    """A trainer's gold answer as the request's reference: None (a group without a reference, judged by
    comparing its answers) where it has none or an empty one, never an empty reference to compare with."""
    if value is None:
        return None
    text = clean(str(value))
    return text if text.strip() else None


def as_conversation(prompt: str | Sequence[Any]) -> list[dict[str, Any]]:
    """A prompt as chat messages: text becomes one user message; messages keep their order, their tool
    calls and their results (turns.py)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": clean(prompt)}]
    turns, _ = as_turns(prompt)
    return turns or [{"role": "user", "content": ""}]


def completion_text(completion: str | Sequence[Mapping[str, Any]]) -> str:
    """A completion's text: as given, or the contents of its messages joined by blank lines."""
    if isinstance(completion, str):
        return clean(completion)
    return "\n\n".join(content_text(m.get("content")) for m in completion if m.get("content"))


def group_spans(
    prompts: Sequence[Any], num_generations: int | None, group_ids: Sequence[Any] | None = None
) -> list[range]:
    """Where each group of the batch starts and ends (module docstring); SplitGroupError when cut."""
    if group_ids is not None or num_generations is None:
        keys = group_ids if group_ids is not None else prompts
        if len(keys) != len(prompts):
            raise ValueError(f"got {len(keys)} group ids for {len(prompts)} completions")
        spans, start = [], 0
        for i in range(1, len(keys) + 1):
            if i == len(keys) or keys[i] != keys[start]:
                spans.append(range(start, i))
                start = i
        return spans
    if num_generations < 1:
        raise ValueError(f"num_generations must be at least 1, got {num_generations}")
    if len(prompts) % num_generations:
        raise SplitGroupError(_split_message(len(prompts), num_generations))
    spans = [range(i, i + num_generations) for i in range(0, len(prompts), num_generations)]
    for span in spans:
        if any(prompts[i] != prompts[span.start] for i in span):
            raise SplitGroupError(_split_message(len(prompts), num_generations))
    return spans


def _split_message(count: int, n: int) -> str:
    return (
        f"the reward function got {count} completions that do not form whole groups of num_generations={n}: "
        "a group arrived split across processes, and judging part of a group ranks its answers against the "
        "wrong siblings. Make each process's generation batch a multiple of num_generations (in TRL: "
        "per_device_train_batch_size x steps_per_generation divisible by num_generations), or train on one "
        "process"
    )


@dataclass(frozen=True)
class GroupOptions:
    """What the trainer's user chose, the same for every group. `request`: further request fields
    (request_options)."""

    grader: str | None = None
    criteria: Sequence[Criterion | Mapping[str, Any]] | None = None
    run_id: str | None = None
    request: Mapping[str, Any] = field(default_factory=dict)


# Request fields an adapter sets itself, from the trainer's batch or from its own arguments.
ADAPTER_FIELDS = frozenset(
    {"conversation", "reference", "answers", "run_id", "step", "group_key", "grader", "criteria", "item"}
    | {"answer", "group_size", "deadline_s"}  # of a member request
)
_PROBE = {"conversation": [{"role": "user", "content": "."}]}


def request_options(options: Mapping[str, Any] | None, *, members: bool = False) -> dict[str, Any]:
    """Further request fields a trainer's user chose for every group (`cascade`, `jury`, `comparison`,
    `decoding`, `reasons`, `rubric`, `options`, ...), checked now, so that a typo stops the start rather
    than every step: ValueError names a field the adapter sets itself, an unknown field, or a bad value.
    `members`: the adapter also sends them on member requests (POST /v1/judge/member), so they must be
    fields of both requests."""
    if not options:
        return {}
    fields = dict(options)
    own = sorted(set(fields) & ADAPTER_FIELDS)
    if own:
        raise ValueError(
            f"request_options cannot set {', '.join(own)}: the adapter sets them (from the batch, or from "
            "its own arguments such as grader= and criteria=)"
        )
    known = set(JudgeRequest.model_fields)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"request_options: unknown request field(s) {', '.join(unknown)}")
    probes: list[tuple[type[JudgeRequest] | type[MemberRequest], dict[str, Any]]] = [
        (JudgeRequest, {**_PROBE, "answers": [{"id": "a", "text": ""}]})
    ]
    if members:
        not_member = sorted(set(fields) - set(MemberRequest.model_fields))
        if not_member:
            raise ValueError(
                f"request_options: {', '.join(not_member)} cannot be sent with each member of a group "
                "(POST /v1/judge/member takes no such field)"
            )
        member = {"group_key": "probe", "group_size": 2, "answer": {"id": "a", "text": ""}}
        probes.append((MemberRequest, {**_PROBE, **member}))
    for model, probe in probes:
        try:
            model.model_validate({**probe, **fields})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            raise ValueError(f"request_options: {problems}") from None
    return fields


def _member_options(options: dict[str, Any]) -> dict[str, Any]:
    return request_options(options, members=True)


# A config field of request options for adapters that send each answer as a member of its group.
MemberRequestOptions = Annotated[
    dict[str, Any],
    AfterValidator(_member_options),
    Field(description="Further request fields for every answer (cascade, jury, ...), checked on load."),
]


@dataclass
class PreparedBatch:
    """A reward call's groups: those to send (by group index) and those refused before sending."""

    spans: list[range]
    requests: dict[int, JudgeRequest]
    refused: dict[int, str]  # group index -> why it was not sent
    key_prefix: str | None

    def chunks(self) -> Iterator[tuple[str | None, list[int]]]:
        """(Idempotency-Key, group indexes) per POST /v1/judge/batch."""
        indexes = sorted(self.requests)
        for c in range(0, len(indexes), CHUNK_GROUPS):
            part = indexes[c : c + CHUNK_GROUPS]
            yield (f"{self.key_prefix}:{c // CHUNK_GROUPS}" if self.key_prefix else None), part


def prepare(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    references: Sequence[Any] | None,
    *,
    num_generations: int | None,
    options: GroupOptions,
    step: int | None,
    scope: str = "",
    items: Sequence[Any] | None = None,
    group_ids: Sequence[Any] | None = None,
) -> PreparedBatch:
    """Groups of the batch as judge requests (module docstring). `scope` tells reward calls of one step
    apart (the process rank). The idempotency key hashes the content, so the same batch sent again
    (a retried step) replays its stored judgements, and a regenerated one is judged afresh. A group's
    key is its group id where given, else its place in the batch, after `scope`."""
    if len(prompts) != len(completions):
        raise ValueError(f"got {len(prompts)} prompts for {len(completions)} completions")
    spans = group_spans(prompts, num_generations, group_ids)
    requests: dict[int, JudgeRequest] = {}
    refused: dict[int, str] = {}
    digest = hashlib.sha256()
    for g, span in enumerate(spans):
        body: dict[str, Any] = {
            "conversation": as_conversation(prompts[span.start]),
            "reference": reference_of(references[span.start]) if references is not None else None,
            "answers": [{"id": f"c{i}", "text": completion_text(completions[i])} for i in span],
            "run_id": options.run_id,
            "step": step,
            "group_key": f"{scope}{group_ids[span.start]}" if group_ids is not None else f"{scope}g{g}",
        }
        body.update(options.request)
        if options.grader is not None:
            body["grader"] = options.grader
        if items is not None and items[span.start] is not None:  # the row's grader fields (code graders)
            body["item"] = dict(items[span.start])
        if options.criteria is not None:
            body["criteria"] = [
                c.model_dump() if isinstance(c, Criterion) else dict(c) for c in options.criteria
            ]
        digest.update(json.dumps(body, sort_keys=True).encode())
        try:
            requests[g] = JudgeRequest.model_validate(body)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            refused[g] = f"not sent to the judge: {problems}"
    key = f"{options.run_id}:{step}:{scope}:{digest.hexdigest()[:16]}" if options.run_id is not None else None
    return PreparedBatch(spans, requests, refused, key)


@dataclass
class BatchResults:
    """One entry per completion, in the trainer's order."""

    answers: list[AnswerResult | None]  # None: the completion's group was not judged
    reasons: list[str]
    judgements: dict[int, JudgeResponse] = field(default_factory=dict)  # group index -> judgement

    @property
    def scores(self) -> list[float | None]:
        return [a.score if a is not None else None for a in self.answers]

    @property
    def unscored_share(self) -> float:
        return sum(1 for s in self.scores if s is None) / len(self.answers) if self.answers else 0.0

    def criterion_scores(self, criterion: str) -> list[float | None]:
        scores: list[float | None] = []
        for answer in self.answers:
            mark = answer.criteria.get(criterion) if answer is not None and answer.criteria else None
            scores.append(mark.score if mark is not None else None)
        return scores


def collect(batch: PreparedBatch, replies: Mapping[int, BatchItem]) -> BatchResults:
    """Map each group's reply back to its completions; failed and refused groups leave theirs unscored,
    with the reason logged once per group."""
    size = batch.spans[-1].stop if batch.spans else 0
    answers: list[AnswerResult | None] = [None] * size
    reasons = [""] * size
    judgements: dict[int, JudgeResponse] = {}
    for g, span in enumerate(batch.spans):
        item = replies.get(g)
        if item is not None and item.judgement is not None:
            judgements[g] = item.judgement
            by_id = {a.id: a for a in item.judgement.answers}
            for i in span:
                answers[i] = by_id.get(f"c{i}")
                reasons[i] = reason_of(answers[i])
            continue
        why = batch.refused.get(g)
        if why is None:
            error = item.error if item is not None else None
            why = f"the judge failed the group: {error.code}: {error.message}" if error else "no reply"
        log.warning("group %d (%d completions) is unscored: %s", g, len(span), why)
        for i in span:
            reasons[i] = f"unscored: {why}"
    return BatchResults(answers, reasons, judgements)


def marks_line(criteria: Mapping[str, CriterionMark]) -> str:
    """Each criterion's mark and reason ("correctness 4: right figure; tone 5: polite"); a marks-only
    judgement's marks alone ("correctness 4; tone 5"); a checklist item met or not ("item_1 met")."""
    return "; ".join(
        f"{name} {_given(m)}" + (f": {m.reason}" if m.reason else "") for name, m in criteria.items()
    )


def score_components(answer: AnswerResult) -> dict[str, float]:
    """Each criterion's 0-1 score (or each blend term's), for trainers that log reward components."""
    if answer.criteria:
        return {name: mark.score for name, mark in answer.criteria.items() if mark.score is not None}
    return {t.grader: t.score for t in answer.terms or () if t.score is not None}


def answer_reason(answer: AnswerResult) -> str | None:
    """The marks and reasons in one line, else the answer's explanation."""
    return marks_line(answer.criteria) if answer.criteria else answer.explanation


def _given(mark: CriterionMark) -> str:
    if mark.met is not None:
        return "met" if mark.met else "not met"
    return str(mark.mark)


def reason_of(answer: AnswerResult | None, max_chars: int = 400) -> str:
    """A short line for a completion table: each criterion's mark and reason, or why it is unscored."""
    if answer is None:
        return "unscored: the judge returned no result for this completion"
    if answer.status == "unscored":
        return f"unscored: {answer.error}"
    text = marks_line(answer.criteria) if answer.criteria else answer.explanation or ""
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


async def judge_async(client: AsyncJudgeClient, batch: PreparedBatch) -> BatchResults:
    chunks = list(batch.chunks())
    replies = await asyncio.gather(
        *(client.judge_batch([batch.requests[g] for g in part], idempotency_key=key) for key, part in chunks)
    )
    return collect(batch, _by_group(chunks, replies))


def judge_sync(client: JudgeClient, batch: PreparedBatch) -> BatchResults:
    """judge_async for callers without an event loop: the chunks one after another."""
    chunks = list(batch.chunks())
    replies = [
        client.judge_batch([batch.requests[g] for g in part], idempotency_key=key) for key, part in chunks
    ]
    return collect(batch, _by_group(chunks, replies))


def _by_group(
    chunks: list[tuple[str | None, list[int]]], replies: Sequence[list[BatchItem]]
) -> dict[int, BatchItem]:
    return {
        g: item
        for (_, part), items in zip(chunks, replies, strict=True)
        for g, item in zip(part, items, strict=True)
    }


class LoopClients:
    """One AsyncJudgeClient per event loop: an httpx client's connections belong to the loop that made
    them, and trainers call reward functions from a loop of their own."""

    def __init__(self, url: str, *, api_key: str | None, retry: RetryPolicy) -> None:
        self._url, self._api_key, self._retry = url, api_key, retry
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, AsyncJudgeClient]] = {}

    def get(self) -> AsyncJudgeClient:
        loop = asyncio.get_running_loop()
        found = self._clients.get(id(loop))
        if found is None or found[0] is not loop:
            self._clients = {k: v for k, v in self._clients.items() if not v[0].is_closed()}
            found = (loop, AsyncJudgeClient(self._url, api_key=self._api_key, retry=self._retry))
            self._clients[id(loop)] = found
        return found[1]


_shared_clients: dict[tuple[str, str | None, float], LoopClients] = {}


def shared_clients(url: str, api_key: str | None, timeout_s: float) -> LoopClients:
    """Clients for trainers that call a bare function (slime, verl): kept per configuration, so calls
    reuse connections. `timeout_s` bounds each call, retries included: a slow judge must not freeze
    training."""
    key = (url, api_key, timeout_s)
    if key not in _shared_clients:
        retry = RetryPolicy(timeout_s=timeout_s, deadline_s=timeout_s)
        _shared_clients[key] = LoopClients(url, api_key=api_key, retry=retry)
    return _shared_clients[key]
