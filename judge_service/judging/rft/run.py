"""Running an RFT grader config on one sample: the reward, the sub-rewards of a multi grader, and the
hosted API's error flags.

A grader that cannot score (a template variable that is not there, a formula that is not arithmetic, the
model's reply unreadable, python code that raised) sets its flag and gives no reward: `reward` is None
here. The compatibility route reports that as the hosted API does (reward 0 with the flag set); a named
grader in a group leaves the answer unscored, never 0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from judge_service.judging.code.grader import sample_of
from judge_service.judging.code.pool import WorkerPool
from judge_service.judging.code.sandbox import WorkerLimits
from judge_service.judging.rft import formula
from judge_service.judging.rft.model import GraderFailed, ModelGrading
from judge_service.judging.rft.models import (
    LabelModelGrader,
    MultiGrader,
    PythonGrader,
    ScoreModelGrader,
    StringCheckGrader,
    TextSimilarityGrader,
    leaves,
)
from judge_service.judging.rft.similarity import UnsupportedMetric, check_metric, similarity
from judge_service.judging.rft.templates import RenderBudget, Templates, TemplateVariableError

ERROR_FLAGS = (
    "formula_parse_error",
    "invalid_variable_error",
    "model_grader_parse_error",
    "model_grader_refusal_error",
    "model_grader_server_error",
    "other_error",
    "python_grader_runtime_error",
    "python_grader_server_error",
    "sample_parse_error",
    "truncated_observation_error",
    "unresponsive_reward_error",
)
# The pool's failure codes as the hosted API's flags.
_PYTHON_FLAGS = {
    "grader_error": "python_grader_runtime_error",
    "grader_load": "python_grader_runtime_error",
    "grader_invalid_result": "python_grader_runtime_error",
    "grader_timeout": "unresponsive_reward_error",
    "grader_memory": "python_grader_server_error",
    "grader_crashed": "python_grader_server_error",
}


class GraderConfigError(ValueError):
    """A config that cannot run as given (validate); `flag` as in ERROR_FLAGS."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


class PythonNotAllowed(GraderConfigError):
    def __init__(self) -> None:
        super().__init__(
            "python_grader_server_error",
            "python graders are off: their source runs with the service's rights; an operator turns them "
            "on with JUDGE_ALLOW_INLINE_PYTHON=true",
        )


@dataclass
class RftOutcome:
    reward: float | None
    sub_rewards: dict[str, float] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # flag -> what happened (the first of each)
    token_usage: int = 0
    model: str | None = None
    execution_time: float = 0.0

    def explanation(self, grader: BaseModel) -> str:
        name = getattr(grader, "name", "grader")
        if self.reward is None:
            return "; ".join(f"{flag}: {detail}" for flag, detail in self.failures.items())
        parts = ", ".join(f"{key} {value:.3g}" for key, value in self.sub_rewards.items())
        return f"{name}: {self.reward:.4g}" + (f" ({parts})" if parts else "")

    def error_flags(self) -> dict[str, Any]:
        """The hosted API's `metadata.errors` object."""
        flags: dict[str, Any] = {flag: flag in self.failures for flag in ERROR_FLAGS}
        flags["model_grader_server_error_details"] = self.failures.get("model_grader_server_error")
        flags["python_grader_runtime_error_details"] = self.failures.get("python_grader_runtime_error")
        flags["python_grader_server_error_type"] = self.failures.get("python_grader_server_error")
        return flags


@dataclass(frozen=True)
class PythonLimits:
    """Each inline python call runs in a fresh sandboxed worker with these limits (no network, no
    environment)."""

    timeout_s: float = 10.0
    worker: WorkerLimits = field(
        default_factory=lambda: WorkerLimits(memory_mb=512, processes=16, file_mb=16)
    )


class RftRunner:
    """Runs configs; `model` answers model graders, `pool` runs python graders when `allow_python`,
    `templates` renders templates (and holds the render processes: close the runner)."""

    def __init__(
        self,
        *,
        model: ModelGrading | None,
        pool: WorkerPool | None,
        allow_python: bool,
        python_limits: PythonLimits = PythonLimits(),
        templates: Templates | None = None,
    ) -> None:
        self._model = model
        self._pool = pool
        self._allow_python = allow_python
        self._python_limits = python_limits
        self._templates = templates or Templates()

    @property
    def allow_python(self) -> bool:
        return self._allow_python

    async def close(self) -> None:
        await self._templates.close()

    async def validate(self, grader: BaseModel) -> None:
        """GraderConfigError (PythonNotAllowed for python while it is off) for a config that cannot run.
        Its templates share one render budget, as a run's do."""
        budget = self._templates.budget()
        for leaf in leaves(grader):
            if isinstance(leaf, PythonGrader):
                if not self._allow_python:
                    raise PythonNotAllowed()
                await self._check_source(leaf)
            if isinstance(leaf, TextSimilarityGrader):
                try:
                    check_metric(leaf.evaluation_metric)
                except UnsupportedMetric as exc:
                    raise GraderConfigError("other_error", str(exc)) from exc
            try:
                for template in _templates(leaf):
                    await self._templates.check(template, budget)
            except TemplateVariableError as exc:
                raise GraderConfigError("invalid_variable_error", str(exc)) from exc
        if isinstance(grader, MultiGrader):
            try:
                formula.parse(grader.calculate_output, grader.graders)
            except formula.FormulaError as exc:
                raise GraderConfigError("formula_parse_error", str(exc)) from exc

    async def run(self, grader: BaseModel, sample_text: str, item: Mapping[str, Any]) -> RftOutcome:
        """The config on one sample; all its templates within one render budget (templates.py)."""
        started = time.perf_counter()
        outcome = RftOutcome(reward=None)
        namespaces = {"item": dict(item), "sample": sample_of(sample_text)}
        budget = self._templates.budget()
        if isinstance(grader, MultiGrader):
            await self._run_multi(grader, namespaces, outcome, budget)
        else:
            try:
                outcome.reward = await self._leaf(grader, namespaces, outcome, budget)
            except GraderFailed as exc:
                outcome.failures.setdefault(exc.flag, exc.detail)
        outcome.execution_time = time.perf_counter() - started
        return outcome

    async def _run_multi(
        self, grader: MultiGrader, namespaces: dict[str, Any], outcome: RftOutcome, budget: RenderBudget
    ) -> None:
        try:
            tree = formula.parse(grader.calculate_output, grader.graders)
        except formula.FormulaError as exc:
            outcome.failures["formula_parse_error"] = str(exc)
            return
        names = list(grader.graders)
        results = await asyncio.gather(
            *(self._leaf(grader.graders[name], namespaces, outcome, budget) for name in names),
            return_exceptions=True,
        )
        for name, result in zip(names, results, strict=True):
            if isinstance(result, GraderFailed):
                outcome.failures.setdefault(result.flag, f"{name}: {result.detail}")
            elif isinstance(result, BaseException):
                raise result
            else:
                outcome.sub_rewards[name] = result
        if outcome.failures:
            return
        try:
            outcome.reward = formula.evaluate(tree, outcome.sub_rewards)
        except (ArithmeticError, ValueError, TypeError) as exc:
            outcome.failures["other_error"] = f"calculate_output failed: {type(exc).__name__}: {exc}"

    async def _leaf(
        self, grader: BaseModel, namespaces: dict[str, Any], outcome: RftOutcome, budget: RenderBudget
    ) -> float:
        try:
            if isinstance(grader, StringCheckGrader):
                return _string_check(grader, *await self._render(grader, namespaces, budget))
            if isinstance(grader, TextSimilarityGrader):
                text, reference = await self._render(grader, namespaces, budget)
                try:
                    return similarity(grader.evaluation_metric, text, reference)
                except UnsupportedMetric as exc:
                    raise GraderFailed("other_error", str(exc)) from exc
            if isinstance(grader, ScoreModelGrader | LabelModelGrader):
                return await self._model_grade(grader, namespaces, outcome, budget)
            if isinstance(grader, PythonGrader):
                return await self._python(grader, namespaces)
        except TemplateVariableError as exc:
            raise GraderFailed("invalid_variable_error", str(exc)) from exc
        raise GraderFailed("other_error", f"a {getattr(grader, 'type', '?')} grader cannot be nested here")

    async def _model_grade(
        self,
        grader: ScoreModelGrader | LabelModelGrader,
        namespaces: dict[str, Any],
        outcome: RftOutcome,
        budget: RenderBudget,
    ) -> float:
        if self._model is None:
            raise GraderFailed(
                "model_grader_server_error", "this service has no judge model to answer model graders"
            )
        if isinstance(grader, ScoreModelGrader):
            answer = await self._model.score(grader, namespaces, self._templates, budget)
            value = float(answer.value)
        else:
            answer = await self._model.label(grader, namespaces, self._templates, budget)
            value = 1.0 if answer.value in grader.passing_labels else 0.0
        outcome.token_usage += answer.tokens
        outcome.model = answer.model
        return value

    async def _render(
        self,
        grader: StringCheckGrader | TextSimilarityGrader,
        namespaces: dict[str, Any],
        budget: RenderBudget,
    ) -> tuple[str, str]:
        text, reference = await self._templates.render_all(
            [grader.input, grader.reference], namespaces, budget
        )
        return text, reference

    async def _check_source(self, grader: PythonGrader) -> None:
        """Compiled in a sandboxed worker, not on the event loop: hostile source makes the compiler slow
        (256k characters) or recurse past its stack."""
        if self._pool is None:
            raise PythonNotAllowed()
        try:
            await self._pool.check(grader.source, self._python_limits.worker)
        except SyntaxError as exc:
            raise GraderConfigError(
                "python_grader_runtime_error", f"python grader {grader.name!r}: {exc}"
            ) from exc

    async def _python(self, grader: PythonGrader, namespaces: dict[str, Any]) -> float:
        if not self._allow_python or self._pool is None:
            raise GraderFailed("python_grader_server_error", str(PythonNotAllowed()))
        (result,) = await self._pool.call(
            {"source": grader.source},
            None,
            [[namespaces["sample"], namespaces["item"]]],
            timeout_s=self._python_limits.timeout_s,
            limits=self._python_limits.worker,
        )
        if not result.ok:
            flag = _PYTHON_FLAGS.get(result.error or "", "python_grader_server_error")
            raise GraderFailed(flag, f"{result.error}: {result.message}")
        value = result.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise GraderFailed(
                "python_grader_runtime_error", f"grade() returned {value!r}; it returns a number"
            )
        return float(value)


def _string_check(grader: StringCheckGrader, text: str, reference: str) -> float:
    if grader.operation == "eq":
        passed = text == reference
    elif grader.operation == "ne":
        passed = text != reference
    elif grader.operation == "like":
        passed = reference in text
    else:  # ilike
        passed = reference.casefold() in text.casefold()
    return 1.0 if passed else 0.0


def _templates(grader: BaseModel) -> list[str]:
    if isinstance(grader, StringCheckGrader | TextSimilarityGrader):
        return [grader.input, grader.reference]
    if isinstance(grader, ScoreModelGrader | LabelModelGrader):
        found: list[str] = []
        for message in grader.input:
            for part in message.parts():
                if isinstance(part, str):
                    found.append(part)
                elif hasattr(part, "text"):
                    found.append(part.text)
        return found
    return []
