"""A multi grader's formula (arithmetic only, never code) and grader templates (unknown variables are
errors, never "")."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import pytest

from judge_service.judging.rft import formula
from judge_service.judging.rft.templates import Templates, TemplateVariableError


def _value(text: str, **values: float) -> float:
    return formula.evaluate(formula.parse(text, values), values)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.5 * a + 0.5 * b", 0.5 * 0.2 + 0.5 * 0.8),
        ("(a + b) / 2", 0.5),
        ("a ^ 2", 0.04),
        ("a ** 2", 0.04),
        ("-a + 1", 0.8),
        ("min(a, b)", 0.2),
        ("max(a, b, 0.9)", 0.9),
        ("abs(a - b)", 0.6),
        ("floor(b * 10) / 10", 0.8),
        ("ceil(a)", 1.0),
        ("sqrt(b)", math.sqrt(0.8)),
        ("exp(0)", 1.0),
        ("log(b)", math.log(0.8)),
        ("3", 3.0),
    ],
)
def test_formulas_compute_as_written(text: str, expected: float) -> None:
    assert _value(text, a=0.2, b=0.8) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("__import__('os').system('true')", "may be called"),
        ("a.__class__", "Attribute"),
        ("a[0]", "Subscript"),
        ("c + 1", "unknown name 'c'"),
        ("'x' * 3", "is not a number"),
        ("a if b else 1", "IfExp"),
        ("a < b", "Compare"),
        ("lambda: 1", "Lambda"),
        ("min(a, key=b)", "positional arguments only"),
        ("a +", "cannot parse"),
        ("a % b", "Mod is not allowed"),
        ("True + a", "is not a number"),
    ],
)
def test_anything_but_arithmetic_is_refused_before_computing(text: str, problem: str) -> None:
    with pytest.raises(formula.FormulaError, match=problem):
        formula.parse(text, ["a", "b"])


@pytest.mark.parametrize("text", ["a / 0", "log(0)", "(0 - a) ^ 0.5", "10 ^ 5000", "sqrt(0 - 1)"])
def test_arithmetic_failures_are_reported_not_raised_as_something_else(text: str) -> None:
    with pytest.raises((ArithmeticError, ValueError)):
        formula.evaluate(formula.parse(text, ["a"]), {"a": 0.5})


@pytest.fixture
async def templates() -> AsyncIterator[Templates]:
    rendering = Templates()
    yield rendering
    await rendering.close()


ITEM = {"answer": "Paris", "facts": {"plan": "Business"}, "tags": ["a", "b"]}
SAMPLE = {"output_text": '{"city": "Paris"}', "output_json": {"city": "Paris"}}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{item.answer}}", "Paris"),
        ("{{ item.facts.plan }} plan", "Business plan"),
        ("{{sample.output_text}}", '{"city": "Paris"}'),
        ("{{sample.output_json.city}}", "Paris"),
        ("{{item.tags}}", '["a", "b"]'),
        ("{{item.facts}}", '{"plan": "Business"}'),
        ("no template", "no template"),
    ],
)
async def test_templates_read_item_and_sample(templates: Templates, template: str, expected: str) -> None:
    assert await templates.render(template, {"item": ITEM, "sample": SAMPLE}) == expected


@pytest.mark.parametrize(
    "template",
    [
        "{{item.missing}}",
        "{{sample.output_json.country}}",
        "{{reference}}",
        "{{item.answer.__class__.__mro__}}",
        "{{ item.answer",
    ],
)
async def test_unknown_variables_are_errors_never_empty(templates: Templates, template: str) -> None:
    with pytest.raises(TemplateVariableError):
        await templates.render(template, {"item": ITEM, "sample": SAMPLE})


async def test_a_sample_without_json_has_no_json_fields(templates: Templates) -> None:
    with pytest.raises(TemplateVariableError):
        await templates.render(
            "{{sample.output_json.city}}", {"item": {}, "sample": {"output_text": "x", "output_json": None}}
        )
