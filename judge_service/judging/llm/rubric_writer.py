"""The judge writes a checklist rubric for one prompt from its conversation and reference reply.

Prompt: prompts/<template>/rubric_system.j2 + rubric_user.j2 (their own version). The reply is constrained
to an object with exactly the keys item_1 .. item_N, each {"description", "kind"}: a fixed set of keys,
so the engine's grammar gives exactly N items without array-length bounds, and the items' names are
fixed too (no name the judge writes can clash or break the criterion name pattern); descriptions are
bounded like reasons, and held to words where reasons are (JUDGE_REASON_WORDS). Every item is a
binary checklist item of its kind; an invalid reply (a description that is empty or holds control
characters, nothing but pitfalls) is asked again up to JUDGE_PARSE_RETRIES times, then refused with
RubricWriteError, never a rubric made up by the service.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any, get_args

from pydantic import ValidationError

from judge_service.backends.base import THINKING_OFF, GenerationRequest
from judge_service.errors import JudgeTimeoutError, PromptTooLongError, RubricWriteError
from judge_service.judging.json_text import extract_json
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.parser import object_of, reason_schema
from judge_service.schemas import ChatMessage, Criterion, CriterionKind, Usage

KINDS: tuple[str, ...] = get_args(CriterionKind)
DESCRIPTION_MAX_CHARS = 160  # one checkable sentence
_JSON_TOKENS_PER_ITEM = 24  # the key, "description", "kind" and its value, punctuation


def reply_tokens(items: int, *, chars_per_token: int = 3) -> int:
    """Tokens a rubric of `items` takes with descriptions at `chars_per_token` (3: prose; 1: the worst the
    schema lets through, a small judge writing one character a token), as parser.max_output_tokens."""
    return items * (DESCRIPTION_MAX_CHARS // chars_per_token + _JSON_TOKENS_PER_ITEM) + 32


@dataclass
class WrittenRubric:
    criteria: list[Criterion]
    prompt_version: str
    usage: Usage = field(default_factory=Usage)
    raw_outputs: list[str] = field(default_factory=list)


def item_names(items: int) -> list[str]:
    return [f"item_{i}" for i in range(1, items + 1)]


def rubric_schema(items: int, *, words: bool = False) -> dict[str, Any]:
    """Exactly `items` keys, each a description (bounded; with `words`, constrained to words as reasons
    are: JUDGE_REASON_WORDS) and a kind."""
    item = {
        "type": "object",
        "properties": {
            "description": reason_schema(DESCRIPTION_MAX_CHARS, reason_words=words),
            "kind": {"type": "string", "enum": list(KINDS)},
        },
        "required": ["description", "kind"],
        "additionalProperties": False,
    }
    return object_of(item_names(items), item)


def parse_rubric(text: str, items: int) -> tuple[list[Criterion], str | None]:
    """(the items, None), or ([], why the reply is not a rubric)."""
    value, error = extract_json(text)
    if error is not None:
        return [], f"the reply is not valid JSON ({error})"
    if not isinstance(value, dict):
        return [], "the reply is not a JSON object"
    criteria: list[Criterion] = []
    for name in item_names(items):
        entry = value.get(name)
        if not isinstance(entry, dict):
            return [], f"{name} is missing"
        description = entry.get("description")
        kind = entry.get("kind")
        if not isinstance(description, str) or kind not in KINDS:
            return [], f"{name} needs a description and a kind ({', '.join(KINDS)})"
        try:
            text = description.strip()[:DESCRIPTION_MAX_CHARS]
            criteria.append(Criterion(name=name, description=text, scale="binary", kind=kind))
        except ValidationError as exc:
            return [], f"{name} is not a valid item: {exc.errors()[0]['msg']}"
    if all(c.pitfall for c in criteria):
        return [], "every item is a pitfall; a rubric needs items an answer can meet"
    return criteria, None


async def write_rubric(
    caller: JudgeCaller,
    conversation: list[ChatMessage],
    reference: str | None,
    *,
    items: int,
    instructions: str | None,
    request_id: str,
) -> WrittenRubric:
    """The judge's checklist for this conversation (module docstring)."""
    s = caller.settings
    shown = caller.content(conversation, reference, [], [], None, None)  # thinking markers broken
    prompt = caller.renderer.render_rubric(shown, items, instructions)
    written = WrittenRubric([], prompt.version)
    # The worst case where the context has room (a reply cut off is unreadable), refused only when even
    # the usual reply does not fit: as the judge's marks are budgeted (caller.py).
    usual, max_tokens = reply_tokens(items), reply_tokens(items, chars_per_token=1)
    limit = caller.max_context_tokens
    if limit is not None:
        prompt_tokens = await caller.count_prompt_tokens(prompt.messages)
        if prompt_tokens is not None:
            if prompt_tokens + usual > limit:
                raise PromptTooLongError(
                    f"writing the rubric needs {prompt_tokens} prompt tokens + {usual} for its {items} "
                    f"items, over the judge's context of {limit} tokens; shorten the conversation or the "
                    "reference, or ask for fewer items",
                    details={"prompt_tokens": prompt_tokens, "reply_tokens": usual, "limit": limit},
                )
            max_tokens = min(max_tokens, limit - prompt_tokens)
    request = GenerationRequest(
        messages=prompt.messages,
        max_tokens=max_tokens,
        json_schema=rubric_schema(items, words=caller.reason_words),
        temperature=s.temperature,
        seed=0,
        request_id=request_id,
        top_logprobs=0,
        thinking=THINKING_OFF,
    )
    why = "no reply"
    try:
        async with asyncio.timeout(s.group_deadline_s):
            for attempt in range(s.parse_retries + 1):
                reply = await caller.generate(replace(request, request_id=f"{request_id}-{attempt}"))
                written.raw_outputs.append(reply.text)
                written.usage.prompt_tokens += reply.prompt_tokens
                written.usage.completion_tokens += reply.completion_tokens
                written.usage.judge_calls += 1
                criteria, problem = parse_rubric(reply.text, items)
                if problem is None:
                    written.criteria = criteria
                    return written
                why = problem
    except TimeoutError as exc:
        raise JudgeTimeoutError(
            f"the judge did not write the rubric within the deadline of {s.group_deadline_s:g} s",
            details={"deadline_s": s.group_deadline_s},
        ) from exc
    raise RubricWriteError(
        f"the judge wrote no valid rubric in {written.usage.judge_calls} attempts (last: {why})",
        details={"attempts": written.usage.judge_calls, "last_problem": why},
    )
