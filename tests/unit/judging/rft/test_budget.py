"""The budget refuses powers, repetitions, format widths and loops that would be too large before they
are computed, in the environment, in constants (validate) and in the output."""

from __future__ import annotations

import time

import pytest

from judge_service.judging.rft.budget import (
    MAX_INT_BITS,
    BudgetedEnvironment,
    BudgetExceeded,
    check_binop,
    check_constants,
    render_capped,
)

MAX_CHARS = 1000
ENV = BudgetedEnvironment(MAX_CHARS)
NAMESPACES = {"item": {"n": 1000, "xs": ["a"] * 1000, "text": "x" * 600}, "sample": {}}


def _render(template: str) -> str:
    return render_capped(ENV.from_string(template), NAMESPACES, MAX_CHARS)


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{ (7 ** 30000000) % 10 }}", "bits"),
        ("{{ (item.n ** (item.n ** 2)) % 10 }}", "bits"),
        ("{{ 2 ** 70000 }}", "bits"),
        ("{% set x = 2 ** 40000 %}{{ (x * x) % 7 }}", "product of more than"),
        ("{{ ('x' * 300000000) | length }}", "longer than the 1000 allowed"),
        ("{{ (item.xs * 1000) | length }}", "longer than the 1000 allowed"),
        ("{{ (item.text + item.text) | length }}", "longer than the 1000 allowed"),
        ("{{ '%0999999999d' % 1 }}", "format width"),
        ("{{ '%*d' % (5, 1) }}", "from arguments"),
        ("{{ '%0999999999d' | format(1) }}", "format width"),
        ("{{ '{:>999999999}'.format(1) }}", "format width"),
        ("{{ '{:{}}'.format(1, 9) }}", "from arguments"),
        ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "range"),
        ("{% for a in range(item.n) %}{% for b in range(item.n) %}{% endfor %}{% endfor %}", "range"),
        ("{% for a in range(2000) %}{{ item.text }}{% endfor %}", "more than 1000 characters"),
    ],
)
def test_bombs_are_refused_before_they_are_computed(template: str, problem: str) -> None:
    started = time.perf_counter()
    with pytest.raises(BudgetExceeded, match=problem):
        _render(template)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ 2 ** 64 }}", str(2**64)),
        ("{{ 2 ** -1 }}", "0.5"),
        ("{{ 1 ** 100000000 }}", "1"),
        ("{{ 'ab' * 3 }}", "ababab"),
        ("{{ 3 * 'ab' }}", "ababab"),
        ("{{ [1] * 3 }}", "[1, 1, 1]"),
        ("{{ item.n * 2.5 }}", "2500.0"),
        ("{{ 'a' + 'b' }} {{ 1 + 2 }}", "ab 3"),
        ("{{ '%5.2f|%-3s|%(n)d' % {'n': 4} if false else '%5.2f' % 3.14159 }}", " 3.14"),
        ("{{ '{:>5}'.format('x') }}", "    x"),
        ("{{ '%03d' | format(7) }}", "007"),
        ("{% for a in range(100) %}{% for b in range(100) %}{% endfor %}{% endfor %}{{ 'done' }}", "done"),
        ("{{ 17 % 5 }}", "2"),
    ],
)
def test_ordinary_arithmetic_and_formatting_still_work(template: str, expected: str) -> None:
    assert _render(template) == expected


def test_int_power_estimate_is_close_to_the_real_size() -> None:
    check_binop("**", 2, MAX_INT_BITS - 1, MAX_CHARS)
    with pytest.raises(BudgetExceeded):
        check_binop("**", 2, MAX_INT_BITS + 1, MAX_CHARS)
    with pytest.raises(BudgetExceeded):
        check_binop("**", 7, 10**400, MAX_CHARS)  # no float overflow on the way


def test_operators_are_never_folded_while_compiling() -> None:
    started = time.perf_counter()
    ENV.from_string("{{ (7 ** 30000000) % 10 }}{{ 'x' * 300000000 }}{{ '%0999999999d' % 1 }}")
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    "template",
    [
        "{{ (7 ** 30000000) % 10 }}",
        "{{ 'x' * 300000000 }}",
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        "{% for a in range(1001) %}{{ range(1000) | length }}{% endfor %}",
    ],
)
def test_constant_bombs_are_refused_while_parsing(template: str) -> None:
    with pytest.raises(BudgetExceeded):
        check_constants(ENV.parse(template), MAX_CHARS)


@pytest.mark.parametrize(
    "template",
    [
        "{{ 2 ** 10 }} {{ 'x' * 10 }}",
        "{% for a in range(1000) %}{% for b in range(999) %}{% endfor %}{% endfor %}",
        "{% for a in item.xs %}{% for b in range(item.n) %}{% endfor %}{% endfor %}",
    ],
)
def test_templates_within_the_budget_pass_the_constant_check(template: str) -> None:
    check_constants(ENV.parse(template), MAX_CHARS)
