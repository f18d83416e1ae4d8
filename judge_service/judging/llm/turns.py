"""How a group with structure is shown to the judge: an answer's trajectory as numbered steps, tool calls
with their name and arguments verbatim, results tied to their call, and the tools once per group.

An answer's trajectory becomes

    <step n="1" role="assistant">Let me look that up.
    <call id="c1" tool="search">{"q": "Lisbon hostels"}</call></step>
    <step n="2" role="tool" call="c1" tool="search">[{"name": "Yes! Hostel", ...}]</step>
    <step n="3" role="assistant">Yes! Hostel, 25 euros a night.</step>

inside its <answer> block; the conversation's messages show their calls and results the same way, and the
tools come first in the conversation, as `<message role="tools">` holding one <tool> each. Every caller
value is escaped (&, < and > in bodies; quotes too in attributes), so no turn can close its block or forge
a step, a call or a cut: the markup is this module's alone. Facts the service can check are written on
the call, for the judge to weigh: `known="no"` for a tool the group's tools do not name, and
`arguments="not a JSON object"` where the tool's parameters ask for an object and the arguments are not
one.

Long trajectories are cut by a stated policy, never silently (TrajectoryCuts): a tool result or call's
arguments over `result_chars` keep their beginning and end around `<cut characters="N"/>`; an answer still
over `answer_chars` then loses the text of its middle steps, from the middle outwards (the first and last
two steps stay whole), each replaced by a cut that says how much went, and if that is not enough, the
arguments of those steps' calls (names and ids stay); a text shorter than its mark is never replaced. The
stored judgement keeps the whole trajectory; only the prompt is cut.

Groups of plain text never come here: their prompts are the templates' own, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from judge_service.schemas import Answer, ChatMessage, Tool, ToolCall

Clean = Callable[[str], str]  # what a caller's text goes through before it is shown (thinking markers)
KEPT_AT_EACH_END = 2  # steps whose text an answer over its budget keeps at the start and at the end


@dataclass(frozen=True)
class TrajectoryCuts:
    """How much of a trajectory the judge sees (module docstring)."""

    result_chars: int = 2000
    answer_chars: int = 24000


DEFAULT_CUTS = TrajectoryCuts()


@dataclass(frozen=True)
class ShownMessage:
    """A conversation message as the templates read it (`role`, `content`)."""

    role: str
    content: Markup


@dataclass(frozen=True)
class ShownAnswer:
    """An answer as the templates read it (`id`, `text`)."""

    id: str
    text: Markup


def shown_conversation(
    conversation: Sequence[ChatMessage], tools: Sequence[Tool] | None, cuts: TrajectoryCuts, clean: Clean
) -> list[ShownMessage]:
    """The conversation's messages with their calls and results, the tools first."""
    known = _tool_shapes(tools)
    shown = [ShownMessage("tools", _tools_block(tools, clean))] if tools else []
    for message in conversation:
        parts = _turn_parts(message, known, cuts.result_chars, clean)
        if message.role == "tool":  # the result, tied to its call
            parts[0] = Markup("<result{}>{}</result>").format(_step_attributes(message, clean), parts[0])
        shown.append(ShownMessage(message.role, Markup("").join(parts)))
    return shown


def shown_answer(
    answer: Answer, tools: Sequence[Tool] | None, cuts: TrajectoryCuts, clean: Clean
) -> ShownAnswer:
    """An answer's text, or its trajectory as steps, cut to the budget."""
    if answer.messages is None:
        return ShownAnswer(answer.id, escape(clean(answer.text)))
    known = _tool_shapes(tools)
    steps = [_turn_parts(m, known, cuts.result_chars, clean) for m in answer.messages]
    _fit(steps, answer.messages, cuts.answer_chars, lambda call: _call(call, known, 0, clean))
    return ShownAnswer(
        answer.id,
        Markup("\n").join(
            Markup('<step n="{}" role="{}"{}>').format(n, m.role, _step_attributes(m, clean))
            + Markup("").join(parts)
            + Markup("</step>")
            for n, (m, parts) in enumerate(zip(answer.messages, steps, strict=True), start=1)
        ),
    )


def escape(text: str) -> Markup:
    """Caller text for an element's body: &, < and > escaped, which is all a body needs to stay inside its
    element (quotes are left as they are: JSON arguments and results stay readable)."""
    return Markup(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _step_attributes(message: ChatMessage, clean: Clean) -> Markup:
    """A tool turn's call and tool, as attributes (escaped, and cleaned of thinking markers as bodies are)."""
    if message.role != "tool":
        return Markup("")
    attributes = Markup(' call="{}"').format(clean(message.tool_call_id or ""))
    return attributes + (Markup(' tool="{}"').format(clean(message.name)) if message.name else Markup(""))


# A turn's shown parts: its text, then one part per call. The text is what the budget cuts.
_Parts = list[Markup]


def _turn_parts(
    message: ChatMessage, known: dict[str, bool] | None, result_chars: int, clean: Clean
) -> _Parts:
    text = clean(message.content)
    first = _cut(text, result_chars) if message.role == "tool" else escape(text)
    return [first, *(_call(call, known, result_chars, clean) for call in message.tool_calls or ())]


def _call(call: ToolCall, known: dict[str, bool] | None, result_chars: int, clean: Clean) -> Markup:
    """A call with its arguments cut to `result_chars` (0: all of them cut, the name and id kept)."""
    name = call.function.name
    flags = Markup("")
    if known is not None and name not in known:
        flags += Markup(' known="no"')
    elif known is not None and known[name] and not _is_object(call.function.arguments):
        flags += Markup(' arguments="not a JSON object"')
    arguments = _cut(clean(call.function.arguments), result_chars)
    return Markup('\n<call id="{}" tool="{}"{}>{}</call>').format(
        clean(call.id), clean(name), flags, arguments
    )


def _cut(text: str, limit: int) -> Markup:
    """The text, or its beginning and end around a cut that says how much went (escaped either way); a
    text no longer than its cut's mark stays whole."""
    if len(text) <= max(limit, len(_mark(len(text)))):
        return escape(text)
    head = limit * 2 // 3
    tail = limit - head
    gone = len(text) - head - tail
    return (
        escape(text[:head]) + Markup('<cut characters="{}"/>').format(gone) + escape(text[len(text) - tail :])
    )


def _mark(gone: int) -> Markup:
    return Markup('<cut characters="{}"/>').format(gone)


def _fit(
    steps: list[_Parts], messages: Sequence[ChatMessage], budget: int, bare: Callable[[ToolCall], Markup]
) -> None:
    """Cut middle steps, from the middle outwards, until the answer fits `budget` characters: first their
    text (a result, a reply; one shorter than its mark stays), then, if that is not enough, their calls'
    arguments (`bare`: the call with its name and id only). The first and last steps are never cut."""
    size = sum(len(part) for parts in steps for part in parts)
    middle = list(range(KEPT_AT_EACH_END, len(steps) - KEPT_AT_EACH_END))
    middle.sort(key=lambda i: abs(i - (len(steps) - 1) / 2))
    for index in middle:  # the text of middle steps
        if size <= budget:
            return
        text, gone = steps[index][0], len(messages[index].content)
        marker = _mark(gone)
        if len(text) > len(marker):
            size -= len(text) - len(marker)
            steps[index][0] = marker
    for index in middle:  # then the arguments of their calls
        for at, call in enumerate(messages[index].tool_calls or (), start=1):
            if size <= budget:
                return
            shorter = bare(call)
            size -= len(steps[index][at]) - len(shorter)
            steps[index][at] = shorter


def _tool_shapes(tools: Sequence[Tool] | None) -> dict[str, bool] | None:
    """Tool name -> whether its parameters ask for a JSON object; None without tools (nothing to check)."""
    if not tools:
        return None
    return {t.function.name: (t.function.parameters or {}).get("type") == "object" for t in tools}


def _tools_block(tools: Sequence[Tool], clean: Clean) -> Markup:
    blocks = []
    for tool in tools:
        spec = tool.function.model_dump(exclude={"name"}, exclude_none=True)
        text = clean(json.dumps(spec, ensure_ascii=False))
        blocks.append(Markup('<tool name="{}">{}</tool>').format(tool.function.name, escape(text)))
    return Markup("\n").join(blocks)


def _is_object(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False
