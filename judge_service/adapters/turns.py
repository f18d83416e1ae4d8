"""A trainer's chat messages as the service's turns: roles, text, tool calls and tool results kept as
structure (docs/trajectories.md), whatever shape the trainer holds them in (dicts, pydantic or OpenAI SDK
objects).

What the service would refuse is mended here rather than failing the trainer's batch, and only that: a
tool result that answers no call made before it becomes a user turn marked `[tool result]` (what every
adapter sent before trajectories); a call without a usable id gets one (`call-<n>`), and a call id used a
second time a new one, its results following it; a developer turn is a system turn and an unknown role a
user turn; C0 control characters and lone surrogates are removed; texts, names and calls past the
service's limits are cut there; a trajectory still over them (more turns, more characters) goes as its
turns' prose, as the adapters sent it before; tools the service would refuse are left out. A call's name
and arguments stay as the policy wrote them (arguments given as a JSON object are written as JSON text): a
call to no tool, or arguments that are not JSON, are the judge's to see.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from judge_service.schemas import Answer, Tool
from judge_service.schemas.common import MAX_TEXT_CHARS
from judge_service.schemas.messages import (
    CALL_ID_PATTERN,
    MAX_CALLED_NAME_CHARS,
    MAX_CALLS,
    MAX_TOOLS,
    MAX_TOOLS_CHARS,
)

from .text import clean, content_text

log = logging.getLogger("judge_service.adapters")

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_CALL_ID = re.compile(CALL_ID_PATTERN)

Turn = dict[str, Any]


@dataclass(frozen=True)
class CallsMade:
    """The calls made so far: the id each was sent with, and the trainer's id -> the latest sent with it
    (what a result naming the trainer's id answers)."""

    sent: frozenset[str] = frozenset()
    by_given: Mapping[str, str] = field(default_factory=dict)


def as_turns(messages: Sequence[Any], made: CallsMade | None = None) -> tuple[list[Turn], CallsMade]:
    """The messages as turns, and the calls made by their end, for a continuation (an answer after its
    conversation) to answer; `made`: the calls made before these."""
    calls = dict(made.by_given) if made else {}
    taken = set(made.sent) if made else set()
    turns = []
    for message in messages:
        role = _ROLES.get(str(_get(message, "role", "user")), "user")
        text = _clipped(content_text(_get(message, "content")))
        turn: Turn = {"role": role, "content": text}
        if role == "assistant":
            made_here = list(_get(message, "tool_calls") or ())[:MAX_CALLS]
            sent = [_call(c, calls, taken) for c in made_here]
            if sent:
                turn["tool_calls"] = sent
        elif role == "tool":
            answered = calls.get(str(_get(message, "tool_call_id")))
            if answered is None:
                turn = {"role": "user", "content": _clipped(f"[tool result] {text}")}
            else:
                turn["tool_call_id"] = answered
                name = _get(message, "name")
                if isinstance(name, str) and clean(name):
                    turn["name"] = clean(name)[:MAX_CALLED_NAME_CHARS]
        turns.append(turn)
    return turns, CallsMade(frozenset(taken), calls)


def own_turns(messages: Sequence[Any]) -> list[Any]:
    """A rollout's own messages in a trace that begins with its prompt: from its first assistant turn on
    (a simulated user's later turns are the rollout's)."""
    roles = [_get(m, "role") for m in messages]
    return list(messages[roles.index("assistant") :]) if "assistant" in roles else []


def as_answer(answer_id: str, messages: Sequence[Any], made: CallsMade | None = None) -> dict[str, Any]:
    """A completion's own messages as an answer: its turns where it holds calls, results or several turns,
    else its text (a lone reply is an answer like any other); a completion without an assistant turn,
    which is no trajectory, is its turns' text, and so is one the service would refuse as turns."""
    turns, _ = as_turns(messages, made)
    if not any(t["role"] == "assistant" for t in turns):
        return {"id": answer_id, "text": _prose(turns)}
    if len(turns) == 1 and "tool_calls" not in turns[0]:
        return {"id": answer_id, "text": turns[0]["content"]}
    answer = {"id": answer_id, "messages": turns}
    try:
        Answer.model_validate({**answer, "id": "a"})  # the turns checked; the id is the caller's
    except ValidationError as exc:
        log.warning("a trajectory of %d turns is sent as prose: %s", len(turns), exc.errors()[0]["msg"])
        return {"id": answer_id, "text": _prose(turns)}
    return answer


def as_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """The tools the policy saw in OpenAI's form, or None without any; a tool the service would refuse
    (no usable name, named twice, an unreadable schema) is left out, and so are those past the service's
    count and size limits."""
    shown: dict[str, dict[str, Any]] = {}
    size = 0
    for tool in tools or ():
        function = _get(tool, "function") or tool
        spec: dict[str, Any] = {"name": _get(function, "name")}
        if isinstance(_get(function, "description"), str):
            spec["description"] = _clipped(clean(_get(function, "description")))
        if isinstance(_get(function, "parameters"), Mapping):
            spec["parameters"] = dict(_get(function, "parameters"))
        if isinstance(_get(function, "strict"), bool):
            spec["strict"] = _get(function, "strict")
        try:
            checked = Tool.model_validate({"type": "function", "function": spec})
        except (ValidationError, ValueError, TypeError):
            continue
        length = len(checked.model_dump_json())
        if spec["name"] in shown or len(shown) == MAX_TOOLS or size + length > MAX_TOOLS_CHARS:
            continue
        size += length
        shown[spec["name"]] = checked.model_dump(mode="json")
    return list(shown.values()) or None


def _call(data: Any, calls: dict[str, str], taken: set[str]) -> dict[str, Any]:
    function = _get(data, "function") or data  # OpenAI's nested form, or flat (verifiers)
    given = _get(data, "id")
    call_id = given if isinstance(given, str) and _CALL_ID.match(given) and given not in taken else None
    if call_id is None:
        call_id = next(f"call-{n}" for n in range(len(taken) + 1) if f"call-{n}" not in taken)
    taken.add(call_id)
    calls[str(given)] = call_id  # a result naming the trainer's id answers the latest call that had it
    arguments = _get(function, "arguments", "")
    if not isinstance(arguments, str):
        try:
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        except (ValueError, TypeError, RecursionError):  # circular, or not JSON at all
            arguments = str(arguments)
    name = clean(str(_get(function, "name") or "")) or "?"
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name[:MAX_CALLED_NAME_CHARS], "arguments": _clipped(clean(arguments))},
    }


def _clipped(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A text within the service's limit: its beginning and end around a note of what was left out."""
    if len(text) <= limit:
        return text
    keep = limit - 64  # room for the note
    note = f"\n[... {len(text) - keep} characters left out ...]\n"
    return text[: keep // 2] + note + text[len(text) - (keep - keep // 2) :]


def _prose(turns: list[Turn]) -> str:
    """Turns as the adapters sent them before trajectories: each turn's text, its calls as JSON, other
    roles marked, within the service's limit."""
    parts = []
    for turn in turns:
        text = turn["content"]
        if turn.get("tool_calls"):
            text += ("\n" if text else "") + json.dumps(turn["tool_calls"], ensure_ascii=False)
        parts.append(text if turn["role"] == "assistant" else f"[{turn['role']}] {text}")
    return _clipped("\n\n".join(p for p in parts if p))


def _get(value: Any, key: str, default: Any = None) -> Any:
    """A field of a message, call or tool, whether the trainer holds it as a mapping or an object (a
    pydantic model, an SDK object with slots); the default where reading it fails."""
    try:
        if isinstance(value, Mapping):
            return value.get(key, default)
        return getattr(value, key, default)
    except Exception:  # a trainer's object whose attribute raises: the field is absent
        return default
