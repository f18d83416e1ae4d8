"""Chat messages and answers: plain text, or an agent's trajectory in OpenAI's chat format (assistant turns
with `tool_calls`, `tool` turns answering them, content as a string or text parts), and the tools the
policy saw. Structure is checked here (a tool turn must answer a call made before it); what the policy did
with the tools (a call to a tool it was not given, arguments that are not the JSON its tool asks for) is
the judge's to see and mark, never refused (docs/trajectories.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args

from pydantic import Field, GetJsonSchemaHandler, ValidationInfo, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from judge_service.schemas.common import (
    ANSWER_ID_PATTERN,
    MAX_TEXT_CHARS,
    STORED,
    JsonSchema,
    StrictModel,
    Text,
    _refuse_duplicates,
)

MAX_TURNS = 128  # messages in one answer's trajectory
MAX_CALLS = 32  # tool calls in one assistant turn
MAX_TOOLS = 64
MAX_TOOLS_CHARS = 100_000  # the tools' definitions together, as JSON: shown to the judge in every prompt
MAX_TRAJECTORY_CHARS = 200_000  # all the text of one answer's turns
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_.:\-]{1,64}$"  # a tool the operator or trainer defines
MAX_CALLED_NAME_CHARS = 256  # a name the policy wrote in a call: any text, shown to the judge as it is
CALL_ID_PATTERN = r"^[\x21-\x7e]{1,128}$"  # printable ASCII without spaces, as engines and SDKs write them

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset(get_args(Role))


def _absent(value: object) -> bool:
    return value is None


class FunctionCall(StrictModel):
    name: Text = Field(
        min_length=1,
        max_length=MAX_CALLED_NAME_CHARS,
        description="The tool called, as the policy wrote it (a name that is no tool's is the judge's to "
        "mark, not refused).",
    )
    arguments: Text = Field(
        default="",
        max_length=MAX_TEXT_CHARS,
        description="The arguments as the policy wrote them (JSON text; a JSON object or array sent here "
        "is written as JSON text). Kept verbatim: arguments that are not the JSON the tool asks for are "
        "shown to the judge as such.",
    )

    @model_validator(mode="before")
    @classmethod
    def _arguments_as_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("arguments"), dict | list):
            return {**data, "arguments": json.dumps(data["arguments"], ensure_ascii=False)}
        return data


class ToolCall(StrictModel):
    id: str = Field(pattern=CALL_ID_PATTERN, description="The call's id, which its tool turn names.")
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(StrictModel):
    role: Role
    content: Text = Field(
        default="",
        max_length=MAX_TEXT_CHARS,
        description="The message's text: a string, or OpenAI text parts (joined); null or absent on an "
        "assistant turn that only calls tools.",
    )
    # Absent fields stay absent in what the service writes back (stored requests, exports): a message
    # reads as the role's own shape, and a text message as it did before trajectories.
    tool_calls: list[ToolCall] | None = Field(
        default=None, max_length=MAX_CALLS, description="An assistant turn's tool calls.", exclude_if=_absent
    )
    tool_call_id: str | None = Field(
        default=None,
        pattern=CALL_ID_PATTERN,
        description="A tool turn: the call it answers.",
        exclude_if=_absent,
    )
    name: Text | None = Field(
        default=None,
        max_length=MAX_CALLED_NAME_CHARS,
        description="A tool turn: the tool.",
        exclude_if=_absent,
    )

    @model_validator(mode="before")
    @classmethod
    def _openai_forms(cls, data: Any, info: ValidationInfo) -> Any:
        """Null content is empty text, text parts are joined, an empty tool_calls list is none; each role
        takes its own fields. A plain {role, content} of a role without tool fields pays one look."""
        if type(data) is not dict or (
            len(data) == 2 and type(data.get("content")) is str and data.get("role") != "tool"
        ):
            return data
        content = data.get("content")
        if content is None and "content" in data:
            data = {**data, "content": ""}
        elif isinstance(content, list):
            data = {**data, "content": _joined_parts(content)}
        if data.get("tool_calls") == []:
            data = {**data, "tool_calls": None}
        if info.context != STORED:
            _check_fields_of_the_role(data)
        return data

    @property
    def structured(self) -> bool:
        """Whether the message is more than a role and its text."""
        return self.tool_calls is not None or self.role == "tool"

    @classmethod
    def __get_pydantic_json_schema__(cls, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """Described as one shape per role (OpenAI's own description does the same), so that a client
        generated from the description, or a fuzzer, knows which fields each role takes; the content
        that may also be null or text parts is described as such."""
        schema = handler.resolve_ref_schema(handler(core))
        fields = schema.pop("properties")
        content = fields["content"]
        text = {"type": "string", **{k: content.pop(k) for k in ("maxLength", "pattern") if k in content}}
        content.pop("type", None)
        part = {
            "type": "object",
            "properties": {"type": {"type": "string", "const": "text"}, "text": text},
            "required": ["type", "text"],
        }
        content["anyOf"] = [text, {"type": "array", "items": part}, {"type": "null"}]
        call_id = next(shape for shape in fields["tool_call_id"]["anyOf"] if shape["type"] == "string")
        fields["tool_call_id"] = {**fields["tool_call_id"], **call_id}
        del fields["tool_call_id"]["anyOf"]
        shapes = {
            "system": ([], []),
            "user": ([], []),
            "assistant": (["tool_calls"], []),
            "tool": (["tool_call_id", "name"], ["tool_call_id"]),
        }
        schema["oneOf"] = [
            {
                "type": "object",
                "title": f"{role.capitalize()}Message",
                "properties": {
                    "role": {"type": "string", "const": role},
                    "content": content,
                    **{name: fields[name] for name in extra},
                },
                "required": ["role", *required],
                "additionalProperties": False,
            }
            for role, (extra, required) in shapes.items()
        ]
        for moved in ("required", "additionalProperties"):
            schema.pop(moved, None)
        return schema


def _check_fields_of_the_role(data: dict[str, Any]) -> None:
    role = data.get("role")
    # The caller's value, not yet checked: a role of ours by name, anything else quoted and cut (a lone
    # surrogate in an error message cannot be encoded, and would be a 500).
    shown = role if isinstance(role, str) and role in _ROLES else ascii(role)[:40]
    if data.get("tool_calls") is not None and role != "assistant":
        raise ValueError(f"only an assistant turn makes tool_calls, not a {shown} turn")
    if role == "tool" and data.get("tool_call_id") is None:
        raise ValueError("a tool turn needs tool_call_id: the id of the call it answers")
    if role != "tool" and (data.get("tool_call_id") is not None or data.get("name") is not None):
        raise ValueError(f"tool_call_id and name belong to tool turns, not a {shown} turn")


def _joined_parts(parts: list[Any]) -> str:
    texts = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise ValueError(
                f"content part {index} is {kind!r}: only text parts "
                "({'type': 'text', 'text': ...}) are judged"
            )
        texts.append(part["text"])
    return "".join(texts)


class ToolFunction(StrictModel):
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: Text | None = Field(default=None, max_length=MAX_TEXT_CHARS, exclude_if=_absent)
    parameters: JsonSchema | None = Field(
        default=None, description="The arguments' JSON Schema.", exclude_if=_absent
    )
    strict: bool | None = Field(default=None, exclude_if=_absent)


class Tool(StrictModel):
    """A tool the policy was given, in OpenAI's form; shown to the judge once per group."""

    type: Literal["function"] = "function"
    function: ToolFunction


class Answer(StrictModel):
    id: str = Field(
        pattern=ANSWER_ID_PATTERN,
        description="Caller-given id, unique in the group: 1-64 of letters, digits, '_', '.', ':', '-'.",
    )
    text: Text = Field(
        default="",
        max_length=MAX_TEXT_CHARS,
        description="The policy model's answer, verbatim; may be empty. With `messages`: the last assistant "
        "turn's text, filled in where left out (what rule graders and code graders read).",
    )
    messages: list[ChatMessage] | None = Field(
        default=None,
        exclude_if=_absent,  # a text answer is written back as it was before trajectories
        min_length=1,
        max_length=MAX_TURNS,
        description="The answer as an agent's trajectory: its turns after the conversation, in OpenAI's "
        "chat format (assistant turns with tool_calls, tool turns with results, a simulated user's turns). "
        "The judge sees them as numbered steps (docs/trajectories.md).",
    )

    @model_validator(mode="after")
    def _text_of_the_trajectory(self, info: ValidationInfo) -> Answer:
        if self.messages is None or info.context == STORED:
            return self
        assistant = [m for m in self.messages if m.role == "assistant"]
        if not assistant:
            raise ValueError("a trajectory (messages) needs at least one assistant turn")
        size = sum(_text_size(m) for m in self.messages)
        if size > MAX_TRAJECTORY_CHARS:
            raise ValueError(
                f"the trajectory holds {size} characters of text, over the limit of {MAX_TRAJECTORY_CHARS}; "
                "send fewer or shorter turns"
            )
        final = assistant[-1].content
        if "text" in self.model_fields_set and self.text != final:
            raise ValueError(
                "with messages, text is the last assistant turn's text: leave text out, or send that text"
            )
        self.text = final
        return self


def _text_size(message: ChatMessage) -> int:
    """The caller characters of a turn that the judge is shown: text, and every call's id, name, arguments."""
    calls = message.tool_calls or ()
    shown = (message.tool_call_id, message.name)
    return (
        len(message.content)
        + sum(len(c.id) + len(c.function.name) + len(c.function.arguments) for c in calls)
        + sum(len(value) for value in shown if value)
    )


TOOLS_DESCRIPTION = (
    "The tools the policy was given (OpenAI's form): shown to the judge once, before the answers, so it can "
    "tell a well-formed call from a hallucinated one (docs/trajectories.md)."
)


def check_structure(
    conversation: Sequence[ChatMessage], answers: Iterable[Answer], tools: Sequence[Tool] | None
) -> None:
    """Every tool turn answers a call made before it (in the conversation, or earlier in its answer), no
    call id is used twice in one sequence, and the tools' names are distinct; ValueError naming the turn
    or the name otherwise."""
    if tools is not None:
        _refuse_duplicates("tool name", [t.function.name for t in tools])
        size = sum(len(t.model_dump_json()) for t in tools)
        if size > MAX_TOOLS_CHARS:
            raise ValueError(
                f"the tools' definitions are {size} characters of JSON, over the limit of {MAX_TOOLS_CHARS}; "
                "send shorter descriptions or parameters, or fewer tools"
            )
    shared = _calls_answered(conversation, set(), "the conversation")
    for answer in answers:
        if answer.messages is not None:
            _calls_answered(answer.messages, set(shared), f"answer {answer.id!r}")


def _calls_answered(messages: Sequence[ChatMessage], made: set[str], where: str) -> set[str]:
    for index, message in enumerate(messages):
        for call in message.tool_calls or ():
            if call.id in made:
                raise ValueError(f"{where}, turn {index}: tool call id {call.id!r} is used twice")
            made.add(call.id)
        if message.role == "tool" and message.tool_call_id not in made:
            raise ValueError(
                f"{where}, turn {index}: the tool turn answers call {message.tool_call_id!r}, which no "
                "earlier assistant turn made"
            )
    return made
