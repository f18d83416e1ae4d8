"""Attribution on the real engine (the embedded judge): vLLM compiles the schema that holds each answer's
marks to its own steps (enums of step numbers, an empty list and null for a text answer), and what the
judge writes under it is read back as each criterion's attribution, within the answer's steps."""

from __future__ import annotations

import uuid

import httpx
import pytest

pytestmark = pytest.mark.engine


def _trajectory(city: str, temperature: int, final: str) -> list[dict[str, object]]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "weather", "arguments": f'{{"city": "{city}"}}'},
    }
    return [
        {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": f'{{"temp_c": {temperature}}}'},
        {"role": "assistant", "content": final},
    ]


def test_the_engine_names_steps_within_each_answer(served: httpx.Client) -> None:
    body = {
        "conversation": [{"role": "user", "content": f"How warm is it in Paris? ({uuid.uuid4().hex[:8]})"}],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
        "answers": [
            {"id": "t1", "messages": _trajectory("Paris", 21, "It is 21 C in Paris.")},
            {"id": "t2", "messages": _trajectory("Rome", 30, "It is 30 C in Paris.")},
            {"id": "t3", "text": "Warm, probably."},
        ],
        "criteria": [
            {
                "name": "correctness",
                "description": "The answer is right.",
                "mark_1": "wrong",
                "mark_5": "right",
            }
        ],
        "attribution": "steps",
        "run_id": "engine-attribution",
    }
    response = served.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    judged = response.json()
    scored = [a for a in judged["answers"] if a["status"] == "scored"]
    assert scored, judged  # the schema compiled and the reply was read
    held = {"t1": 3, "t2": 3, "t3": 0}
    for answer in scored:
        attribution = answer["criteria"]["correctness"]["attribution"]
        steps = held[answer["id"]]
        assert all(1 <= step <= steps for step in attribution["steps"]), answer
        first = attribution["first_wrong_step"]
        assert first is None or 1 <= first <= steps, answer
    for answer in judged["answers"]:  # unscored only for a reason the reply gave, never silently 0
        assert answer["status"] == "scored" or answer["error"], answer
