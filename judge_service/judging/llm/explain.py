"""Reasons written afterwards for a judgement made with marks only (POST /v1/judgements/{id}/reasons).

The judge is shown the very prompt it marked from (rebuilt from the stored judgement: the request, the
first answer order, the canary where there was one), its marks as its own reply, and one more message
asking why it gave each mark (prompts/<template>/explain_user.j2). So the prompt up to the marks is
byte-identical to the judged one, and an engine whose prefix cache still holds it computes only the
marks and the question. The reply's schema holds a reason per criterion and no mark: the marks are
fixed, and no score changes. Per-answer judgements get one call per answer, side by side, as they were
judged; group judgements one call for every answer.

What it refuses (409): a judgement without judge marks, one whose reasons were written inline, one made
by another model or another version of the marks-only prompt (the reasons would explain marks some other
judge gave).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from judge_service.backends.base import THINKING_OFF
from judge_service.errors import ConflictError, JudgeTimeoutError
from judge_service.judging.base import Group
from judge_service.judging.json_text import extract_json
from judge_service.judging.llm.caller import JudgeCall, JudgeCaller, OrderPlan
from judge_service.judging.llm.criteria import resolve_criteria
from judge_service.judging.llm.parser import max_output_tokens, object_of, reason_schema
from judge_service.judging.llm.prompt import is_checklist
from judge_service.schemas import (
    Answer,
    CriterionMark,
    Decoding,
    ExplainedReasons,
    StoredJudgement,
    Usage,
)

DECODINGS: tuple[Decoding, ...] = ("group", "per_answer")


async def explain_marks(
    caller: JudgeCaller, stored: StoredJudgement, canary: Answer | None, reason_language: str | None
) -> ExplainedReasons:
    """The reasons for `stored`'s marks (module docstring), in `reason_language` (an English language
    name, as the judged prompt asked); 409 where they cannot be written."""
    marks = _marks_to_explain(stored, caller.model_name)
    request = stored.request
    criteria = resolve_criteria(request.criteria, referenced=request.reference is not None)
    checklist = is_checklist(criteria)
    decoding = _decoding_of(stored, caller, checklist=checklist)
    names = [c.name for c in criteria]
    group = Group.of(request, stored.judgement_id, canary=canary)
    order = group.with_canary((stored.answer_orders or [[a.id for a in request.answers]])[0], 0)
    shown = {a.id: a for a in [*request.answers, *([canary] if canary is not None else [])]}
    if canary is not None and stored.canaries and stored.canaries[0].criteria:
        marks[canary.id] = {name: _given(m) for name, m in stored.canaries[0].criteria.items()}
    plan = OrderPlan(
        conversation=list(request.conversation),
        reference=request.reference,
        answers=[shown[answer_id] for answer_id in order],
        criteria=criteria,
        request_id=f"{stored.judgement_id}-explain",
        group_id=stored.judgement_id,
        decoding=decoding,
        reason_language=reason_language,
        alone=None if canary is None else canary.id,
        reasons=False,
        tools=request.tools,
    )
    calls = await caller.prepare(plan)
    wanted = [c for c in calls if any(a in marks and a != _id(canary) for a in c.answer_ids)]
    usage = Usage()
    deadline = caller.settings.group_deadline_s
    try:
        async with asyncio.timeout(deadline):
            replies = await asyncio.gather(
                *(_explain_call(caller, call, marks, names, usage, _id(canary)) for call in wanted)
            )
    except TimeoutError as exc:
        raise JudgeTimeoutError(
            f"the judge did not write the reasons within the group deadline of {deadline:g} s",
            details={"deadline_s": deadline},
        ) from exc
    answers: dict[str, dict[str, str]] = {}
    failures: dict[str, str] = {}
    for found, failed in replies:
        answers.update(found)
        failures.update(failed)
    for answer in request.answers:  # unscored: the judge gave it no marks to explain
        if answer.id not in marks:
            failures[answer.id] = "the judge gave this answer no marks, so there are none to explain"
    return ExplainedReasons(
        answers={a.id: answers[a.id] for a in request.answers if a.id in answers},
        failures={a.id: failures[a.id] for a in request.answers if a.id in failures},
        judge_model=caller.model_name,
        prompt_version=caller.renderer.explain_version(
            decoding, checklist=checklist, referenced=request.reference is not None
        ),
        usage=usage,
        created_at=datetime.now(UTC),
    )


def _id(answer: Answer | None) -> str | None:
    return None if answer is None else answer.id


Given = int | bool  # a mark, or a checklist item's met


def _given(mark: CriterionMark) -> Given:
    """What the judge wrote for a criterion: the mark, or for a checklist item whether it is met."""
    return bool(mark.met) if mark.mark is None else mark.mark


def _marks_to_explain(stored: StoredJudgement, model: str) -> dict[str, dict[str, Given]]:
    """Answer id -> criterion -> the integer mark, for every answer the judge marked; 409 unless this is a
    marks-only judgement by this judge's model."""
    if stored.judge_model is None or stored.reasons is None:
        raise ConflictError(
            "this judgement has no marks-only judge marks to explain: only judgements made with reasons "
            "'none' (or 'sample', where the group drew none) can have their reasons written afterwards",
            details={"judgement_id": stored.judgement_id},
        )
    if stored.reasons == "inline":
        raise ConflictError(
            "this judgement's reasons were written with its marks: they are in answers[].criteria",
            details={"judgement_id": stored.judgement_id, "reasons": "inline"},
        )
    if stored.judge_model != model:
        raise ConflictError(
            f"this judgement was marked by {stored.judge_model!r}, and this service's judge is {model!r}: "
            "reasons from another judge would not explain its marks",
            details={"judge_model": stored.judge_model, "model": model},
        )
    marks: dict[str, dict[str, Given]] = {}
    for answer in stored.answers:
        if answer.criteria:
            marks[answer.id] = {name: _given(m) for name, m in answer.criteria.items()}
    return marks


def _decoding_of(stored: StoredJudgement, caller: JudgeCaller, *, checklist: bool) -> Decoding:
    """The decoding whose marks-only prompt made the judgement; 409 when the prompt has changed since."""
    versions = {}
    referenced = stored.request.reference is not None
    for decoding in DECODINGS:
        try:
            version = caller.prompt_version(
                decoding, reasons=False, checklist=checklist, referenced=referenced
            )
            versions[version] = decoding
        except FileNotFoundError:
            continue
    if stored.prompt_version not in versions:
        raise ConflictError(
            f"this judgement was made with prompt {stored.prompt_version!r}, which this service no longer "
            f"has (its marks-only prompts: {', '.join(versions) or 'none'}): reasons written now would "
            "answer another prompt",
            details={"prompt_version": stored.prompt_version},
        )
    return versions[stored.prompt_version]


async def _explain_call(
    caller: JudgeCaller,
    call: JudgeCall,
    marks: dict[str, dict[str, Given]],
    names: list[str],
    usage: Usage,
    canary_id: str | None,
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """One judged call continued with its marks and the question why: (reasons, failures) by answer."""
    s = caller.settings
    marked = [a for a in call.answer_ids if a in marks]
    explained = [a for a in marked if a != canary_id]
    if call.per_answer:
        reply_marks: Any = {name: marks[marked[0]][name] for name in names}
    else:
        reply_marks = {a: {name: marks[a][name] for name in names} for a in marked}
    question = caller.renderer.render_explain(None if call.per_answer else explained, caller.reason_max_chars)
    messages = [
        *call.request.messages,
        {"role": "assistant", "content": json.dumps(reply_marks, separators=(",", ":"))},
        {"role": "user", "content": question},
    ]
    reason = reason_schema(caller.reason_max_chars, reason_words=caller.reason_words)
    schema = object_of(names, reason)
    if not call.per_answer:
        schema = object_of(explained, schema)
    request = replace(
        call.request,
        messages=messages,
        json_schema=schema,
        max_tokens=max_output_tokens(len(explained), len(names), caller.reason_max_chars, chars_per_token=1),
        top_logprobs=0,
        thinking=THINKING_OFF,
    )
    found: dict[str, dict[str, str]] = {}
    failures: dict[str, str] = {}
    for attempt in range(s.parse_retries + 1):  # an invalid reply is asked again, as marks are
        reply = await caller.generate(replace(request, request_id=f"{request.request_id}-x{attempt}"))
        usage.prompt_tokens += reply.prompt_tokens
        usage.completion_tokens += reply.completion_tokens
        usage.judge_calls += 1
        found, failures = _parse_reasons(
            reply.text, explained, names, call.per_answer, caller.reason_max_chars
        )
        if not failures:
            return found, {}
    return found, failures


def _parse_reasons(
    text: str, answer_ids: list[str], names: list[str], per_answer: bool, max_chars: int
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """(answer -> criterion -> reason, answer -> why none) from an explain reply."""
    value, error = extract_json(text)
    if error is not None:
        why = f"the judge's reasons are not valid JSON ({error})"
        return {}, dict.fromkeys(answer_ids, why)
    by_answer = {answer_ids[0]: value} if per_answer else value
    found: dict[str, dict[str, str]] = {}
    failures: dict[str, str] = {}
    for answer_id in answer_ids:
        entry = by_answer.get(answer_id) if isinstance(by_answer, dict) else None
        if not isinstance(entry, dict):
            failures[answer_id] = "the judge wrote no reasons for this answer"
            continue
        reasons = {n: entry[n].strip()[:max_chars] for n in names if isinstance(entry.get(n), str)}
        missing = [n for n in names if not reasons.get(n)]
        if missing:
            failures[answer_id] = f"the judge wrote no reason for {', '.join(missing)}"
        else:
            found[answer_id] = reasons
    return found, failures
