"""The in-process fast path renders exactly what Jinja2 renders, and takes only text and lookups."""

from __future__ import annotations

from typing import Any

import pytest
from jinja2 import StrictUndefined, UndefinedError
from jinja2.sandbox import SandboxedEnvironment

from judge_service.judging.rft import plain
from judge_service.judging.rft.budget import BudgetedEnvironment, finalize

JINJA = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, finalize=finalize)
ENV = BudgetedEnvironment(1_000_000)
NAMESPACES: dict[str, Any] = {
    "item": {
        "answer": "Paris",
        "facts": {"plan": "Business", "n": 3, "ok": True, "none": None, "pi": 3.5},
        "tags": ["a", "b", {"c": "d"}],
        "items": "a key that is also a dict method",
        "ünï": "x",
        "with space": "spaced",
    },
    "sample": {"output_text": "é ✓ \U0001f600", "output_json": {"city": "Paris", "list": [1, 2]}},
}


def _fast(template: str) -> str:
    parsed = plain.parse(template)
    assert parsed is not None, template
    return "".join(parsed.generate(ENV, NAMESPACES))


@pytest.mark.parametrize(
    "template",
    [
        "{{item.answer}}",
        "{{ item.answer }} and {{sample.output_text}}",
        "{{\titem.facts.plan\n}}",
        "{{ item.facts }} {{ item.tags }} {{ item.facts.n }} {{ item.facts.ok }} {{ item.facts.none }}",
        "{{ item.facts.pi }} {{ item.tags[0] }} {{ item.tags[2]['c'] }} {{ item.facts[\"plan\"] }}",
        "{{ item['with space'] }} {{ item.items }} {{ sample.output_json.list[1] }}",
        "{{ sample }}",
        "line\r\nbreaks\rall\n{{item.answer}}\n",
        "{{item.answer}}\n\n",
        "a } b }} c %} d #} {{item.answer}}}",
        "{ {item.answer} }{{item.answer}}",
        "",
    ],
)
def test_the_fast_path_renders_what_jinja_renders(template: str) -> None:
    assert _fast(template) == JINJA.from_string(template).render(**NAMESPACES)


@pytest.mark.parametrize(
    "template",
    [
        "{{ item.missing }}",
        "{{ item.tags[7] }}",
        "{{ item.answer.upper.x }}",
        "{{ sample.output_json.list.nope }}",
    ],
)
def test_missing_values_fail_as_in_jinja(template: str) -> None:
    with pytest.raises(UndefinedError) as expected:
        JINJA.from_string(template).render(**NAMESPACES)
    with pytest.raises(UndefinedError) as fast:
        _fast(template)
    assert fast.value.message == expected.value.message


def test_private_attributes_are_refused_by_the_sandbox() -> None:
    with pytest.raises(Exception, match="unsafe"):
        _fast("{{ item.answer.__class__ }}")


@pytest.mark.parametrize(
    "template",
    [
        "{{ item.answer | lower }}",
        "{{ item.answer ~ 'x' }}",
        "{{ item.facts.n * 2 }}",
        "{% if item.answer %}x{% endif %}",
        "{# a comment #}",
        "{{- item.answer }}",
        "{{ item.answer -}}",
        "{{ reference }}",
        "{{ itemx }}",
        "{{ item.tags[-1] }}",
        "{{ item.tags[01] }}",
        "{{ item . answer }}",
        "{{ item.answer",
        "{{{item.answer}}}",
        "{{ range(10) }}",
        "{{ item['a\\'b'] }}",
    ],
)
def test_anything_more_than_lookups_is_not_plain(template: str) -> None:
    assert plain.parse(template) is None
