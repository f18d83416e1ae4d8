"""A grader written as code (spec.py), as a Grader (judging/base.py): the group's calls run in the worker
pool (pool.py), each result checked and scaled to 0-1, every failure an unscored answer that says which.

Pinned: the fingerprint holds the hash of the function's module source (and its distribution's version
when it comes from an installed package), read when the service starts; a worker that later finds other
source refuses to run it (`grader_changed`), so one fingerprint never covers two versions of the code.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge_service.judging.base import AnswerGrade, Group, GroupGrades
from judge_service.judging.code.pool import CallResult, WorkerPool
from judge_service.judging.code.spec import CodeGraderSpec
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import Answer, JudgeRequest

_MAX_DETAILS_BYTES = 4096  # explanation fields kept per answer


@dataclass(frozen=True)
class Pinned:
    """What the worker found when it loaded the function at the service's start."""

    source_sha256: str
    version: str | None
    is_async: bool


async def load_code_grader(spec: CodeGraderSpec, pool: WorkerPool, metrics: JudgeMetrics) -> CodeGrader:
    """Import the function in a worker and pin its source. ValueError naming the grader when it cannot."""
    try:
        described = await pool.describe({"module": spec.module, "function": spec.function}, spec.limits)
    except LookupError as exc:
        raise ValueError(f"code grader {spec.name!r} ({spec.target}): {exc}") from exc
    pinned = Pinned(described["source_sha256"], described["version"], described["is_async"])
    return CodeGrader(spec, pinned, pool, metrics)


class CodeGrader:
    """Grader[None]: it reads the group alone (its `item` included), so it has no options."""

    runs_model = False

    def __init__(self, spec: CodeGraderSpec, pinned: Pinned, pool: WorkerPool, metrics: JudgeMetrics) -> None:
        self.spec = spec
        self.pinned = pinned
        self._pool = pool
        self._metrics = metrics
        for outcome in ("ok", "grader_error", "grader_timeout"):
            metrics.code_grader_calls.labels(grader=spec.name, outcome=outcome)

    @property
    def name(self) -> str:
        return self.spec.name

    def options(self, request: JudgeRequest) -> None:
        return None

    def config(self, options: None) -> Mapping[str, Any]:
        return {
            f"code:{self.spec.name}": {
                "target": self.spec.target,
                "signature": self.spec.signature,
                "source_sha256": self.pinned.source_sha256,
                "version": self.pinned.version,
                "score_range": list(self.spec.score_range),
            }
        }

    async def grade(self, group: Group, options: None) -> GroupGrades:
        item = dict(group.item or {})
        spec = self.spec
        target = {"module": spec.module, "function": spec.function}
        started = time.perf_counter()
        if spec.signature == "group":
            (result,) = await self._pool.call(
                target,
                self.pinned.source_sha256,
                [[_group_argument(group, item)]],
                timeout_s=spec.timeout_s,
                limits=spec.limits,
            )
            grades = self._group_grades(group, result)
        else:
            results = await self._pool.call(
                target,
                self.pinned.source_sha256,
                [_arguments(spec.signature, answer.text, group.reference, item) for answer in group.answers],
                timeout_s=spec.timeout_s,
                limits=spec.limits,
            )
            grades = {
                answer.id: self._answer_grade(result)
                for answer, result in zip(group.answers, results, strict=True)
            }
        self._metrics.code_grader_seconds.labels(grader=spec.name).observe(time.perf_counter() - started)
        return GroupGrades(grades)

    def _group_grades(self, group: Group, result: CallResult) -> dict[str, AnswerGrade]:
        if not result.ok:
            return {answer.id: self._answer_grade(result) for answer in group.answers}
        value = result.value
        ids = [answer.id for answer in group.answers]
        if isinstance(value, list) and len(value) == len(ids):
            per_answer = dict(zip(ids, value, strict=True))
        elif isinstance(value, dict) and set(value) == set(ids):
            per_answer = value
        else:
            shape = f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__
            invalid = CallResult.failed(
                "grader_invalid_result",
                f"returned {shape}; a group grader returns a list with one result per answer ({len(ids)}) "
                "or a dict by answer id",
            )
            return {answer_id: self._answer_grade(invalid) for answer_id in ids}
        return {answer_id: self._answer_grade(CallResult(per_answer[answer_id])) for answer_id in ids}

    def _answer_grade(self, result: CallResult) -> AnswerGrade:
        if result.ok:
            grade = _checked_grade(result.value, self.spec.score_range)
            outcome = "ok" if grade.score is not None else "grader_invalid_result"
        else:
            grade = AnswerGrade(None, f"{result.error}: {result.message}")
            outcome = result.error or "grader_error"
        self._metrics.code_grader_calls.labels(grader=self.spec.name, outcome=outcome).inc()
        return grade


def _arguments(signature: str, text: str, reference: str | None, item: dict[str, Any]) -> list[Any]:
    """A grader's arguments for one answer; verl's `ground_truth` is None for a group without a reference."""
    if signature == "rft":
        return [sample_of(text), item]
    return [str(item.get("data_source", "")), text, reference, item]  # verl


def sample_of(text: str) -> dict[str, Any]:
    """The RFT `sample` namespace of an answer: its text, and its JSON when the whole text is JSON."""
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        parsed = None
    return {"output_text": text, "output_json": parsed}


def _answer_argument(answer: Answer) -> dict[str, Any]:
    """An answer as a group grader reads it: its text, and its trajectory's turns where it has them."""
    if answer.messages is None:
        return {"id": answer.id, "text": answer.text}
    turns = [m.model_dump() for m in answer.messages]
    return {"id": answer.id, "text": answer.text, "messages": turns}


def _group_argument(group: Group, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "conversation": [m.model_dump() for m in group.conversation],
        "reference": group.reference,
        "answers": [_answer_argument(a) for a in group.answers],
        "item": item,
    }


def _checked_grade(value: Any, score_range: tuple[float, float]) -> AnswerGrade:
    """A returned value as a grade: a number (or a dict with "score" and explanation fields) within
    `score_range`, scaled to 0-1; anything else unscored with `grader_invalid_result`."""
    details: dict[str, Any] | None = None
    if isinstance(value, dict):
        if "score" not in value:
            return _invalid(f"returned a dict without 'score' (keys: {', '.join(sorted(value))[:200]})")
        details = {key: field for key, field in value.items() if key != "score"} or None
        value = value["score"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return _invalid(f"returned {value!r}; a score is a finite number")
    low, high = score_range
    if not low <= value <= high:
        return _invalid(f"returned {value:g}, outside its score_range [{low:g}, {high:g}]")
    score = (value - low) / (high - low)
    explanation = f"returned {value:g}" + ("" if score_range == (0.0, 1.0) else f" of [{low:g}, {high:g}]")
    return AnswerGrade(score, explanation, details=_bounded(details))


def _invalid(message: str) -> AnswerGrade:
    return AnswerGrade(None, f"grader_invalid_result: {message}")


def _bounded(details: dict[str, Any] | None) -> dict[str, Any] | None:
    """Explanation fields as stored: JSON, at most _MAX_DETAILS_BYTES (longer ones cut, and said so)."""
    if details is None:
        return None
    text = json.dumps(details, default=repr)
    if len(text) <= _MAX_DETAILS_BYTES:
        return json.loads(text)
    return {"truncated": text[:_MAX_DETAILS_BYTES]}
