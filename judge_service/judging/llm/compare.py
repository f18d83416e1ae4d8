"""One comparison of two answers by the judge: render, call, read the verdict, retry.

The prompt (prompt.py, compare templates) shows the conversation and reference, then the two answers as A
and B, and asks for a short reason and a verdict per criterion from 1 (A much better) to 5 (B much
better), 3 even. The verdicts become one preference for B, 0-1: the criteria's weighted mean of
(verdict - 1) / 4 (strength.Verdict). A reply that is not such an object is retried up to
`parse_retries` times; a comparison still without a verdict, or one the engine failed, comes back with
its error and no preference: the grader leaves it out and counts it, never guesses a winner.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any

from judge_service.backends.base import GenerationRequest
from judge_service.errors import JudgeServiceError
from judge_service.judging.json_text import extract_json
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.parser import reason_schema
from judge_service.judging.llm.prompt import GroupContent
from judge_service.schemas import Answer, Criterion

VERDICTS = (1, 2, 3, 4, 5)  # 1 A much better, 2 A better, 3 even, 4 B better, 5 B much better


@dataclass
class Compared:
    """A comparison as made: who was shown first, the verdicts, or why there are none."""

    first: str
    second: str
    verdict: dict[str, int] | None = None
    preference: float | None = None  # for `second`, 0-1 (module docstring); None: failed
    reason: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    raw_outputs: list[str] = field(default_factory=list)
    round: int | None = None  # knockout: the round it was played in (1 = the first)
    ms: float = 0.0
    failure: JudgeServiceError | None = None  # the engine's error, where that is why it failed

    def record(self) -> dict[str, Any]:
        """The stored form (schemas.ComparisonRecord)."""
        return {
            "first": self.first,
            "second": self.second,
            "verdict": self.verdict,
            "preference": self.preference,
            "reason": self.reason,
            "error": self.error,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "round": self.round,
        }


def verdict_schema(criteria: list[Criterion], reason_max_chars: int) -> dict[str, Any]:
    names = [c.name for c in criteria]
    return {
        "type": "object",
        "properties": {
            "reason": reason_schema(reason_max_chars),
            "verdict": {
                "type": "object",
                "properties": {name: {"type": "integer", "enum": list(VERDICTS)} for name in names},
                "required": names,
                "additionalProperties": False,
            },
        },
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    }


def read_verdict(text: str, criteria: list[Criterion]) -> tuple[dict[str, int] | None, str | None, str]:
    """(verdict per criterion, reason, problem): the verdict is None, with the problem, unless every
    criterion has one of 1-5."""
    data, problem = extract_json(text)
    if problem is not None:
        return None, None, problem
    if not isinstance(data, dict) or not isinstance(data.get("verdict"), dict):
        return None, None, 'the reply has no "verdict" object'
    given = data["verdict"]
    verdict: dict[str, int] = {}
    for criterion in criteria:
        value = given.get(criterion.name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value not in VERDICTS:
            return None, None, f"criterion {criterion.name!r} has no verdict of 1-5 (got {value!r})"
        verdict[criterion.name] = int(value)
    reason = data.get("reason")
    return verdict, reason if isinstance(reason, str) and reason else None, ""


def preference_for_second(verdict: dict[str, int], criteria: list[Criterion]) -> float:
    total = sum(c.effective_weight for c in criteria)
    return sum((verdict[c.name] - 1) / 4 * c.effective_weight for c in criteria) / total


async def compare(
    caller: JudgeCaller,
    group: GroupContent,
    first: Answer,
    second: Answer,
    *,
    request_id: str,
    group_id: str,
) -> Compared:
    """`first` (shown as A) against `second` (B), retried as the module docstring says."""
    s = caller.settings
    criteria = group.criteria
    prompt = caller.renderer.render_compare(group, first, second)
    request = GenerationRequest(
        messages=prompt.messages,
        # Worst case: a reason at a token per character, and a few tokens per criterion.
        max_tokens=caller.reason_max_chars + 16 * len(criteria) + 32,
        json_schema=verdict_schema(criteria, caller.reason_max_chars),
        temperature=s.temperature,
        seed=0,
        request_id=request_id,
        group_id=group_id,
    )
    done = Compared(first.id, second.id)
    started = time.perf_counter()
    problem = "no reply"
    try:
        async with asyncio.timeout(s.group_deadline_s):
            for attempt in range(s.parse_retries + 1):
                reply = await caller.generate(replace(request, request_id=f"{request_id}-{attempt}"))
                done.calls += 1
                done.raw_outputs.append(reply.text)
                done.prompt_tokens += reply.prompt_tokens
                done.completion_tokens += reply.completion_tokens
                verdict, reason, problem = read_verdict(reply.text, criteria)
                if verdict is not None:
                    done.verdict, done.reason = verdict, reason
                    done.preference = round(preference_for_second(verdict, criteria), 6)
                    break
    except TimeoutError:
        problem = f"no verdict within the group deadline of {s.group_deadline_s:g} s"
    except JudgeServiceError as exc:  # the engine's own failure (not ready, overloaded, gone)
        problem = f"the judge failed the comparison: {exc.message}"
        done.failure = exc
    if done.verdict is None:
        done.error = problem if done.calls <= 1 else f"{problem} (after {done.calls} tries)"
    done.ms = (time.perf_counter() - started) * 1000
    return done
