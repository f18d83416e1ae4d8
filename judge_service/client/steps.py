"""Per-step weights from a judged group of trajectories, for a trainer that spreads credit over steps.

    reply = judge.judge({..., "answers": [{"id": "t1", "messages": [...]}, ...], "attribution": "steps"})
    weights = step_weights(reply, {"t1": 7, "t2": 5, ...})   # answer id -> its number of steps

Each answer's advantage is its score less the mean score of the group's scored answers (GRPO's centring;
divide by the group's spread yourself where the trainer does). Every step of an answer carries that
advantage, with one exception that is the point of attribution: an answer below the mean whose judge named
a first wrong step (the earliest over its criteria) carries nothing on the steps before it, since the judge
says they did not go wrong; the blame falls on that step and what follows. An answer above the mean keeps
its advantage on every step. An unscored answer gets None, never zeros: it was not judged, not judged bad.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge_service.schemas import AnswerResult, JudgeResponse


def step_weights(
    reply: JudgeResponse | Mapping[str, Any], steps: Mapping[str, int]
) -> dict[str, list[float] | None]:
    """Answer id -> one weight per step (module docstring), for every answer `steps` names."""
    judged = reply if isinstance(reply, JudgeResponse) else JudgeResponse.model_validate(reply)
    by_id = {answer.id: answer for answer in judged.answers}
    unknown = sorted(set(steps) - set(by_id))
    if unknown:
        raise ValueError(f"the reply has no answer {', '.join(map(repr, unknown))}")
    scores = [a.score for a in judged.answers if a.score is not None]
    mean = sum(scores) / len(scores) if scores else 0.0
    weights: dict[str, list[float] | None] = {}
    for answer_id, count in steps.items():
        answer = by_id[answer_id]
        named = max(_named_steps(answer), default=0)
        if type(count) is not int or count < named:
            raise ValueError(
                f"answer {answer_id!r}: {count!r} steps, but the judge named step {named}: give each "
                "answer's number of steps (its messages)"
            )
        if answer.score is None:
            weights[answer_id] = None
            continue
        advantage = answer.score - mean
        first = first_wrong_step(answer)
        blameless = first - 1 if advantage < 0 and first is not None else 0
        weights[answer_id] = [0.0 if step <= blameless else advantage for step in range(1, count + 1)]
    return weights


def _named_steps(answer: AnswerResult) -> list[int]:
    """Every step the judge named for the answer, cited or first wrong."""
    named: list[int] = []
    for mark in (answer.criteria or {}).values():
        if mark.attribution is not None:
            named += mark.attribution.steps
            if mark.attribution.first_wrong_step is not None:
                named.append(mark.attribution.first_wrong_step)
    return named


def first_wrong_step(answer: AnswerResult) -> int | None:
    """The earliest first wrong step the judge named over the answer's criteria; None where it named none
    (or the group was judged without attribution)."""
    named = [
        mark.attribution.first_wrong_step
        for mark in (answer.criteria or {}).values()
        if mark.attribution is not None and mark.attribution.first_wrong_step is not None
    ]
    return min(named) if named else None
