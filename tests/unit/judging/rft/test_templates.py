"""Templates within a budget: plain ones in-process, the rest in a render process; every bomb a
TemplateVariableError that says why, while the event loop keeps running."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from judge_service.judging.rft.template_pool import TemplateLimits
from judge_service.judging.rft.templates import Templates, TemplateVariableError

LIMITS = TemplateLimits(timeout_s=1.0, max_output_chars=100_000, memory_mb=128, workers=2)
NAMESPACES: dict[str, Any] = {
    "item": {"answer": "Paris", "n": 100_000, "xs": list(range(2000)), "text": "y" * 30_000},
    "sample": {"output_text": "paris", "output_json": None},
}
# Loops over the item's own list: no range() and no constant to refuse up front; only the timeout stops it.
SLOW = (
    "{% for a in item.xs %}{% for b in item.xs %}{% for c in item.xs %}{% endfor %}{% endfor %}{% endfor %}"
)


@pytest.fixture
async def templates() -> AsyncIterator[Templates]:
    rendering = Templates(LIMITS)
    yield rendering
    await rendering.close()
    assert rendering.processes() == 0


async def test_plain_templates_render_in_process(templates: Templates) -> None:
    text = await templates.render("{{ item.answer }} / {{ sample.output_text }}", NAMESPACES)
    assert text == "Paris / paris"
    assert templates.processes() == 0


async def test_other_templates_render_in_a_process(templates: Templates) -> None:
    template = "{% if sample.output_text | lower == item.answer | lower %}same{% endif %} {{ item.xs[:3] }}"
    assert await templates.render(template, NAMESPACES) == "same [0, 1, 2]"
    assert templates.processes() == 1


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{ (7 ** 30000000) % 10 }}", "bits"),
        ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "range"),
        ("{% for a in range(item.n) %}{% for b in range(item.n) %}{% endfor %}{% endfor %}", "range"),
        ("{{ ('x' * 300000000) | length }}", "longer than"),
        ("{% for a in range(10) %}{{ item.text }}{% endfor %}", "more than 100000 characters"),
        ("{{ item.text }}{{ item.text }}{{ item.text }}{{ item.text }}", "at most 100000 characters"),
        ("{{ 'x' | center(300000000) }}", "MiB"),
        (SLOW, "longer than 1 s"),
    ],
)
async def test_bombs_are_template_variable_errors(templates: Templates, template: str, problem: str) -> None:
    started = time.perf_counter()
    with pytest.raises(TemplateVariableError, match=problem):
        await templates.render(template, NAMESPACES)
    assert time.perf_counter() - started < LIMITS.timeout_s + 1.5  # a process start, then the timeout


async def test_the_event_loop_runs_while_a_bomb_renders(templates: Templates) -> None:
    await templates.render("{{ item.answer | lower }}", NAMESPACES)  # a started process
    gaps: list[float] = []

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    with pytest.raises(TemplateVariableError, match="longer than"):
        await templates.render(SLOW, NAMESPACES)
    ticker.cancel()
    assert len(gaps) > 20 and max(gaps) < 0.2


async def test_a_timed_out_process_is_replaced(templates: Templates) -> None:
    with pytest.raises(TemplateVariableError):
        await templates.render(SLOW, NAMESPACES)
    assert await templates.render("{{ item.answer | upper }}", NAMESPACES) == "PARIS"


async def test_a_graders_templates_share_one_output_cap(templates: Templates) -> None:
    three = await templates.render_all(["{{ item.text }}"] * 3, NAMESPACES)
    assert [len(text) for text in three] == [30_000] * 3
    with pytest.raises(TemplateVariableError, match="together"):
        await templates.render_all(["{{ item.text }}", "{{ item.text | upper }}"] * 2, NAMESPACES)


async def test_check_refuses_invalid_templates_and_constant_bombs(templates: Templates) -> None:
    await templates.check("{{ item.answer | lower }}")
    await templates.check("{{ item.answer }}")
    with pytest.raises(TemplateVariableError, match="invalid"):
        await templates.check("{{ item.answer ")
    with pytest.raises(TemplateVariableError, match="bits"):
        await templates.check("{{ (7 ** 30000000) % 10 }}")
