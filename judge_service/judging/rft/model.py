"""score_model and label_model graders, answered by this service's judge model.

The config's input messages are rendered (templates.py), the last user turn closes with a line asking
for the hosted API's output object, and decoding is constrained to it where the backend can:
{"result": number} for a score, {"result": one of the labels} for a label. The config's `model` is
recorded, not called: the service's own judge answers, and its name is reported as the sampled model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge_service.backends.base import GenerationRequest, JudgeBackend
from judge_service.errors import JudgeServiceError
from judge_service.judging.json_text import extract_json
from judge_service.judging.rft.models import (
    InputMessage,
    LabelModelGrader,
    MediaContent,
    ScoreModelGrader,
    TextContent,
)
from judge_service.judging.rft.templates import RenderBudget, Templates

DEFAULT_MAX_TOKENS = 512


class GraderFailed(Exception):
    """A grader could not give a score: `flag` is the hosted API's error flag that says why."""

    def __init__(self, flag: str, detail: str) -> None:
        super().__init__(detail)
        self.flag = flag
        self.detail = detail


@dataclass(frozen=True)
class ModelAnswer:
    value: Any
    tokens: int
    model: str


class ModelGrading:
    def __init__(self, backend: JudgeBackend) -> None:
        self._backend = backend

    @property
    def model_name(self) -> str:
        return self._backend.model_name

    async def score(
        self,
        grader: ScoreModelGrader,
        namespaces: Mapping[str, Any],
        templates: Templates,
        budget: RenderBudget | None = None,
    ) -> ModelAnswer:
        low, high = grader.score_range
        schema = {
            "type": "object",
            "properties": {"result": {"type": "number"}},
            "required": ["result"],
            "additionalProperties": False,
        }
        instruction = (
            f'Reply with only a JSON object {{"result": <number>}}, the score from {low:g} (worst) to '
            f"{high:g} (best)."
        )
        chat = await _chat(grader.input, namespaces, instruction, templates, budget)
        answer = await self._ask(chat, schema, grader)
        value = answer.value
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise GraderFailed(
                "model_grader_parse_error",
                f"the model's result {value!r} is not a number in [{low:g}, {high:g}]",
            )
        return ModelAnswer(float(value), answer.tokens, answer.model)

    async def label(
        self,
        grader: LabelModelGrader,
        namespaces: Mapping[str, Any],
        templates: Templates,
        budget: RenderBudget | None = None,
    ) -> ModelAnswer:
        schema = {
            "type": "object",
            "properties": {"result": {"type": "string", "enum": grader.labels}},
            "required": ["result"],
            "additionalProperties": False,
        }
        instruction = (
            'Reply with only a JSON object {"result": <label>}, the label being one of: '
            + ", ".join(json.dumps(label, ensure_ascii=False) for label in grader.labels)
            + "."
        )
        chat = await _chat(grader.input, namespaces, instruction, templates, budget)
        answer = await self._ask(chat, schema, None)
        if answer.value not in grader.labels:
            raise GraderFailed(
                "model_grader_parse_error", f"the model's label {answer.value!r} is not one of labels"
            )
        return answer

    async def _ask(
        self, chat: list[dict[str, str]], schema: dict[str, Any], grader: ScoreModelGrader | None
    ) -> ModelAnswer:
        params = grader.sampling_params if grader is not None else None
        request = GenerationRequest(
            messages=chat,
            max_tokens=(params.max_completions_tokens if params and params.max_completions_tokens else None)
            or DEFAULT_MAX_TOKENS,
            json_schema=schema,
            temperature=params.temperature if params and params.temperature is not None else 0.0,
            seed=params.seed if params else None,
        )
        try:
            generation = await self._backend.generate(request)
        except JudgeServiceError as exc:
            raise GraderFailed("model_grader_server_error", exc.message) from exc
        tokens = generation.prompt_tokens + generation.completion_tokens
        if generation.finish_reason == "length":
            raise GraderFailed(
                "truncated_observation_error", "the model's reply was cut at max_completions_tokens"
            )
        parsed, problem = extract_json(generation.text)
        if problem is not None or not isinstance(parsed, dict) or "result" not in parsed:
            raise GraderFailed(
                "model_grader_parse_error",
                f"the model's reply has no JSON object with a result: {generation.text[:200]!r}",
            )
        return ModelAnswer(parsed["result"], tokens, self._backend.model_name)


async def _chat(
    messages: list[InputMessage],
    namespaces: Mapping[str, Any],
    instruction: str,
    templates: Templates,
    budget: RenderBudget | None,
) -> list[dict[str, str]]:
    """The rendered messages as a chat every template accepts: the system and developer messages as one
    leading system message, the others in order, and the output instruction closing the last user turn.
    Every part is rendered in one call, so the messages share one output cap (and the run's render
    budget)."""
    parts = [[_text(part) for part in message.parts()] for message in messages]
    texts = iter(await templates.render_all([text for texts in parts for text in texts], namespaces, budget))
    rendered = [
        {
            "role": "system" if message.role == "developer" else message.role,
            "content": "\n".join(next(texts) for _ in message_parts),
        }
        for message, message_parts in zip(messages, parts, strict=True)
    ]
    system = "\n\n".join(m["content"] for m in rendered if m["role"] == "system")
    turns = [m for m in rendered if m["role"] != "system"]
    if turns and turns[-1]["role"] == "user":
        turns[-1] = {"role": "user", "content": f"{turns[-1]['content']}\n\n{instruction}"}
    else:
        turns.append({"role": "user", "content": instruction})
    return ([{"role": "system", "content": system}] if system else []) + turns


def _text(part: str | TextContent | MediaContent) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, TextContent):
        return part.text
    raise GraderFailed(
        "other_error", f"{part.type} content is not supported: this service's judge reads text"
    )
