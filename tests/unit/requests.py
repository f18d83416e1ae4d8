"""Small judge requests the unit tests build, and the criterion they override with."""

from __future__ import annotations

from typing import Any

from judge_service.schemas import JudgeRequest

CRITERION = {"name": "correctness", "description": "right", "mark_1": "wrong", "mark_5": "right"}


def request(**extra: Any) -> JudgeRequest:
    """A two-answer group ("2+2?": "4" and "5"), with `extra` fields."""
    body: dict[str, Any] = {
        "conversation": [{"role": "user", "content": "2+2?"}],
        "reference": "4",
        "answers": [{"id": "a", "text": "4"}, {"id": "b", "text": "5"}],
    }
    return JudgeRequest.model_validate(body | extra)
