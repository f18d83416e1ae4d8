"""A trainer's chat messages as the service's turns: roles, text, tool calls and tool results kept as
structure (docs/trajectories.md), whatever shape the trainer holds them in (dicts, pydantic or OpenAI SDK
objects).

What the service would refuse is mended here rather than failing the trainer's batch, and only that: a
tool result that answers no call made before it becomes a user turn marked `[tool result]` (what every
adapter sent before trajectories); a call without a usable id gets one (`call-<n>`), and a call id used a
second time a new one, its results following it; a developer turn is a system turn and an unknown role a
user turn; C0 control characters are removed. A call's name and arguments stay as the policy wrote them
(arguments given as a JSON object are written as JSON text): a call to no tool, or arguments that are not
JSON, are the judge's to see.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.schemas.messages import CALL_ID_PATTERN, MAX_CALLED_NAME_CHARS, TOOL_NAME_PATTERN

from .text import clean, content_text

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_CALL_ID = re.compile(CALL_ID_PATTERN)
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)

Turn = dict[str, Any]


def as_turns(
    messages: Sequence[Any], made: Mapping[str, str] | None = None
) -> tuple[list[Turn], dict[str, str]]:
    """The messages as turns, and the calls made by the end (the trainer's call id -> the id sent), for a
    continuation (an answer after its conversation) to answer; `made`: the calls made before these."""
    calls = dict(made or {})
    taken = set(calls.values())
    turns = []
    for message in messages:
        data = _as_dict(message)
        role = _ROLES.get(str(data.get("role", "user")), "user")
        text = content_text(data.get("content"))
        turn: Turn = {"role": role, "content": text}
        if role == "assistant":
            sent = [_call(_as_dict(c), calls, taken) for c in data.get("tool_calls") or ()]
            if sent:
                turn["tool_calls"] = sent
        elif role == "tool":
            answered = calls.get(str(data.get("tool_call_id")))
            if answered is None:
                turn = {"role": "user", "content": f"[tool result] {text}"}
            else:
                turn["tool_call_id"] = answered
                name = data.get("name")
                if isinstance(name, str) and name:
                    turn["name"] = clean(name)[:MAX_CALLED_NAME_CHARS]
        turns.append(turn)
    return turns, calls


def own_turns(messages: Sequence[Any]) -> list[Any]:
    """A rollout's own messages in a trace that begins with its prompt: from its first assistant turn on
    (a simulated user's later turns are the rollout's)."""
    roles = [_as_dict(m).get("role") for m in messages]
    return list(messages[roles.index("assistant") :]) if "assistant" in roles else []


def as_answer(
    answer_id: str, messages: Sequence[Any], made: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A completion's own messages as an answer: its turns where it holds calls, results or several turns,
    else its text (a lone reply is an answer like any other); a completion without an assistant turn,
    which is no trajectory, is its turns' text."""
    turns, _ = as_turns(messages, made)
    if not any(t["role"] == "assistant" for t in turns):
        return {"id": answer_id, "text": "\n\n".join(t["content"] for t in turns if t["content"])}
    if len(turns) == 1 and "tool_calls" not in turns[0]:
        return {"id": answer_id, "text": turns[0]["content"]}
    return {"id": answer_id, "messages": turns}


def as_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """The tools the policy saw in OpenAI's form, or None without any; a tool without a usable name, or
    one named twice, is left out (the service would refuse the group)."""
    shown: dict[str, dict[str, Any]] = {}
    for tool in tools or ():
        data = _as_dict(tool)
        function = _as_dict(data.get("function", data))
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name) or name in shown:
            continue
        spec: dict[str, Any] = {"name": name}
        if isinstance(function.get("description"), str):
            spec["description"] = clean(function["description"])
        if isinstance(function.get("parameters"), Mapping):
            spec["parameters"] = dict(function["parameters"])
        if isinstance(function.get("strict"), bool):
            spec["strict"] = function["strict"]
        shown[name] = {"type": "function", "function": spec}
    return list(shown.values()) or None


def _call(data: dict[str, Any], calls: dict[str, str], taken: set[str]) -> dict[str, Any]:
    function = _as_dict(data.get("function") or data)  # OpenAI's nested form, or flat (verifiers)
    given = data.get("id")
    call_id = given if isinstance(given, str) and _CALL_ID.match(given) and given not in taken else None
    if call_id is None:
        call_id = next(f"call-{n}" for n in range(len(taken) + 1) if f"call-{n}" not in taken)
    taken.add(call_id)
    calls[str(given)] = call_id  # a result naming the trainer's id answers the latest call that had it
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, default=str)
    name = clean(str(function.get("name") or "")) or "?"
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name[:MAX_CALLED_NAME_CHARS], "arguments": clean(arguments)},
    }


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if hasattr(value, "model_dump"):
        return dict(value.model_dump())
    return dict(vars(value)) if hasattr(value, "__dict__") else {}
