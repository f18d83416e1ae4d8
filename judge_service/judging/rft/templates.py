"""Grader templates: `{{item.x}}`, `{{sample.output_text}}`, `{{sample.output_json.x}}`, in a sandboxed
Jinja2 environment, within a budget of time and size.

Only the `item` and `sample` namespaces exist. A variable that is not there (a missing field, a typo, a
sample without JSON) is an error, `TemplateVariableError`, never an empty string: a grader that silently
compared against "" would hand out rewards for nothing. Objects and lists render as JSON.

Where a template renders: text and plain lookups (plain.py, the common case) in the service's process, in
microseconds; anything else in a render process (template_pool.py) with a timeout, a memory cap and an
output cap, so no template holds the event loop. A template over its budget (a timeout, too much output,
a power or repetition refused up front by budget.py) is a TemplateVariableError that says what to change.

The render processes are shared, so their time is rationed twice. Per grader run (one sample's whole
config, or one validate): a RenderBudget of one render timeout for all its templates together, rendered
one at a time; once one times out or their time adds up to the timeout, the rest fail at once without
asking a process. Between callers: a waiting template renders in its caller's turn (template_pool.py),
the caller being the API key the request is for (ADMISSION_KEY, set by the HTTP layer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from jinja2 import UndefinedError

from judge_service.judging.llm.admission import ADMISSION_KEY
from judge_service.judging.rft import plain
from judge_service.judging.rft.budget import BudgetedEnvironment, BudgetExceeded, join_capped
from judge_service.judging.rft.template_pool import RenderPool, TemplateLimits


class TemplateVariableError(ValueError):
    """A template names a variable the namespaces lack, is not a valid template, or is over its budget."""


class RenderBudget:
    """The render-process time of one grader run: `timeout_s` for all its templates together, rendered
    one at a time. Spent once a template times out or their time adds up to `timeout_s`; after that
    `spent` says why, and the run's templates that need a process fail without asking one."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.used_s = 0.0
        self.spent: str | None = None
        self.one_at_a_time = asyncio.Lock()  # a run holds at most one render process

    @property
    def left_s(self) -> float:
        return self.timeout_s - self.used_s

    def charge(self, template: str, seconds: float, timed_out: bool) -> None:
        self.used_s += seconds
        if timed_out or self.left_s <= 0:
            self.spent = (
                f"the grader's templates have used their {self.timeout_s:g} s of render time "
                f"(JUDGE_TEMPLATE_TIMEOUT_S, for all of a run's templates together) on {template[:80]!r}"
            )


class Templates:
    """Renders and checks templates within `limits`; owns the render processes (close them)."""

    def __init__(self, limits: TemplateLimits | None = None) -> None:
        self.limits = limits or TemplateLimits()
        self._env = BudgetedEnvironment(self.limits.max_output_chars)  # plain lookups use its getattr
        self._pool = RenderPool(self.limits)
        self._checked: set[str] = set()

    def budget(self) -> RenderBudget:
        """A fresh render budget, for one grader run (or one validate)."""
        return RenderBudget(self.limits.timeout_s)

    async def render(
        self, template: str, namespaces: Mapping[str, Any], budget: RenderBudget | None = None
    ) -> str:
        """`template` with its variables from `namespaces` (item, sample)."""
        (text,) = await self.render_all([template], namespaces, budget)
        return text

    async def render_all(
        self, templates: Sequence[str], namespaces: Mapping[str, Any], budget: RenderBudget | None = None
    ) -> list[str]:
        """Each template rendered, in order; together at most the output cap (a grader's templates share
        it, so a config of many templates cannot multiply it), and within `budget` (the run's; without
        one, a fresh one for these templates)."""
        budget = budget or self.budget()
        left = self.limits.max_output_chars
        texts = []
        for template in templates:
            text = await self._render(template, namespaces, left, budget)
            left -= len(text)
            texts.append(text)
        return texts

    async def _render(
        self, template: str, namespaces: Mapping[str, Any], max_chars: int, budget: RenderBudget
    ) -> str:
        if "{" not in template:  # no template syntax: the common literal reference
            text = template
        elif (fast := plain.parse(template)) is not None:
            text = self._render_plain(template, fast, namespaces, max_chars)
        else:
            message = {"op": "render", "template": template, "namespaces": dict(namespaces)}
            text = await self._ask(message, budget)
        if len(text) > max_chars:
            raise TemplateVariableError(_over_cap(template, self.limits.max_output_chars))
        return text

    def _render_plain(
        self, template: str, fast: plain.PlainTemplate, namespaces: Mapping[str, Any], max_chars: int
    ) -> str:
        try:
            return join_capped(fast.generate(self._env, namespaces), max_chars)
        except BudgetExceeded as exc:
            raise TemplateVariableError(_over_cap(template, self.limits.max_output_chars)) from exc
        except UndefinedError as exc:
            raise TemplateVariableError(f"template {template[:80]!r}: {exc.message}") from exc
        except Exception as exc:  # the sandbox refusing an attribute
            raise TemplateVariableError(
                f"template {template[:80]!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    async def check(self, template: str, budget: RenderBudget | None = None) -> None:
        """Parse only (validate): TemplateVariableError for a template that cannot compile, or that
        computes constants over the budget; within `budget` (the config's: a fresh one without it)."""
        if "{" in template and template not in self._checked and plain.parse(template) is None:
            await self._ask({"op": "check", "template": template}, budget or self.budget())
            if len(self._checked) > 4096:
                self._checked.clear()
            self._checked.add(template)

    async def _ask(self, message: dict[str, Any], budget: RenderBudget) -> str:
        template = message["template"]
        async with budget.one_at_a_time:
            if budget.spent is not None:
                done = "checked" if message["op"] == "check" else "rendered"
                raise TemplateVariableError(f"template {template[:80]!r} was not {done}: {budget.spent}")
            reply = await self._pool.ask(message, caller=ADMISSION_KEY.get(), timeout_s=budget.left_s)
            budget.charge(template, reply["seconds"], reply.get("timed_out", False))
        if not reply["ok"]:
            message_text = reply["message"]
            if reply.get("timed_out"):
                message_text = (
                    f"template {template[:80]!r} is over its budget: {message_text}, and a grader's "
                    f"templates have {self.limits.timeout_s:g} s together (JUDGE_TEMPLATE_TIMEOUT_S); "
                    f"{_ADVICE}"
                )
            elif not message_text.startswith("template "):
                message_text = f"template {template[:80]!r}: {message_text}; {_ADVICE}"
            raise TemplateVariableError(message_text)
        return str(reply.get("text", ""))

    def processes(self) -> int:
        return self._pool.processes()

    async def close(self) -> None:
        await self._pool.close()


_ADVICE = "templates are for reading item and sample fields, not for computing"


def _over_cap(template: str, max_chars: int) -> str:
    return (
        f"template {template[:80]!r} is over its budget: a grader's templates may render at most "
        f"{max_chars} characters together (JUDGE_TEMPLATE_MAX_OUTPUT_CHARS)"
    )
