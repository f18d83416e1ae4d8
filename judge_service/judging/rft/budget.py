"""The sandboxed Jinja2 environment grader templates render in, with a size budget checked up front.

Refused before Python computes them, as `BudgetExceeded`: a power or product whose integer result would
have more than MAX_INT_BITS bits (Python will not print one that long anyway); a repetition or `+` whose
string or list would be longer than the output cap; a `%` or `str.format` width beyond the output cap;
`range()` items beyond MAX_RANGE_ITEMS in one render, all loops together; and output beyond the cap.
Nothing is folded while compiling (`optimized=False`, and intercepted operators are never constant): a
`{{ 7 ** 30000000 }}` is refused when rendered, not computed by `validate`. `check_constants` refuses
the same bombs written as constants while parsing, so `validate` names them too. (Jinja2 still folds a
filter over constants while compiling, `{{ 'x' | center(10**8) }}`: that happens in the render process.)

These make the common bombs fail fast and say why; they are not the hard bound (a filter such as
`center(10**8)` or a `~` in a loop still grows). The hard bound is the process a template renders in
(template_pool.py): a wall-clock timeout, a memory cap and the output cap.

Imports only Jinja2 and the standard library: the render process (template_worker.py) starts quickly.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jinja2 import StrictUndefined, Template, nodes
from jinja2.sandbox import SandboxedEnvironment, safe_range

MAX_INT_BITS = 65_536
MAX_RANGE_ITEMS = 1_000_000
# `%` conversions with their width and precision (`%-10.3f`, `%(name)s`, `%*d`).
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_NUMBER = re.compile(r"\d+")


class BudgetExceeded(Exception):
    """A template would compute or render more than its budget allows; the message says what."""


def finalize(value: Any) -> Any:
    """Objects and lists render as JSON."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


def check_binop(operator: str, left: Any, right: Any, max_chars: int) -> None:
    """BudgetExceeded when `left operator right` would be larger than the budget; estimated from the
    operands' sizes, never by computing it."""
    if operator == "**" and _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
        if right > MAX_INT_BITS or right * math.log2(abs(left)) > MAX_INT_BITS:
            raise BudgetExceeded(
                f"{_short(left)} ** {_short(right)} would have more than {MAX_INT_BITS} bits, the most an "
                "integer may have"
            )
    elif operator == "*":
        if _is_int(left) and _is_int(right):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise BudgetExceeded(f"a product of more than {MAX_INT_BITS} bits")
        else:
            for sequence, times in ((left, right), (right, left)):
                if _is_sequence(sequence) and _is_int(times) and len(sequence) * times > max_chars:
                    raise BudgetExceeded(
                        f"repeating a {type(sequence).__name__} of length {len(sequence)} {times} times "
                        f"makes it longer than the {max_chars} allowed"
                    )
    elif operator == "+" and _is_sequence(left) and _is_sequence(right):
        if len(left) + len(right) > max_chars:
            raise BudgetExceeded(f"joining makes it longer than the {max_chars} allowed")
    elif operator == "%" and isinstance(left, str):
        check_percent_format(left, max_chars)


def check_percent_format(text: str, max_chars: int) -> None:
    for match in _PERCENT_SPEC.finditer(text):
        _check_widths(match.groups(), max_chars)


def check_format_spec(text: str, max_chars: int) -> None:
    """`str.format` fields: widths within the budget, and no width taken from an argument."""
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return  # format() itself says what is wrong
    for _literal, _field, spec, _conversion in fields:
        if spec and "{" in spec:
            raise BudgetExceeded("format widths taken from arguments ({:{}}) are not allowed")
        _check_widths(_NUMBER.findall(spec or ""), max_chars)


def _check_widths(widths: Any, max_chars: int) -> None:
    for width in widths:
        if width == "*":
            raise BudgetExceeded("format widths taken from arguments (%*d) are not allowed")
        if width is not None and int(width) > max_chars:
            raise BudgetExceeded(f"a format width of {width} is more than the {max_chars} allowed")


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, str | list | tuple)


def _short(value: int) -> str:
    return str(value) if value.bit_length() < 64 else f"an integer of {value.bit_length()} bits"


class BudgetedEnvironment(SandboxedEnvironment):
    """The sandbox with `**`, `*`, `+` and `%` checked by check_binop and format widths checked."""

    intercepted_binops = frozenset({"**", "*", "+", "%"})

    def __init__(self, max_output_chars: int) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, finalize=finalize, optimized=False)
        self.max_output_chars = max_output_chars
        self.filters["format"] = self._checked_format(self.filters["format"])

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        check_binop(operator, left, right, self.max_output_chars)
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            check_format_spec(value.__self__, self.max_output_chars)
        return wrapped

    def _checked_format(self, format_filter: Callable[..., str]) -> Callable[..., str]:
        def checked(value: Any, *args: Any, **kwargs: Any) -> str:
            check_percent_format(str(value), self.max_output_chars)
            return format_filter(value, *args, **kwargs)

        return checked


class _Ranges:
    """`range` for one render: jinja's MAX_RANGE per call, and MAX_RANGE_ITEMS over every call (nested
    loops multiply)."""

    def __init__(self) -> None:
        self.items = 0

    def __call__(self, *args: int) -> range:
        made = safe_range(*args)
        self.items += len(made)
        if self.items > MAX_RANGE_ITEMS:
            raise BudgetExceeded(f"loops over range() ran past {MAX_RANGE_ITEMS} items in all")
        return made


def render_capped(template: Template, namespaces: Mapping[str, Any], max_chars: int) -> str:
    """`template` rendered, stopped as soon as its output passes `max_chars` characters."""
    return join_capped(template.generate(**namespaces, range=_Ranges()), max_chars)


def join_capped(pieces: Iterator[str], max_chars: int) -> str:
    kept: list[str] = []
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > max_chars:
            raise BudgetExceeded(f"it renders more than {max_chars} characters")
        kept.append(piece)
    return "".join(kept)


def check_constants(tree: nodes.Template, max_chars: int) -> None:
    """BudgetExceeded for a bomb written with constants: `7 ** 30000000`, `'x' * 10**9`, loops over
    constant ranges whose items multiply past MAX_RANGE_ITEMS."""
    for binop in tree.find_all((nodes.Pow, nodes.Mul, nodes.Add, nodes.Mod)):
        if isinstance(binop.left, nodes.Const) and isinstance(binop.right, nodes.Const):
            check_binop(binop.operator, binop.left.value, binop.right.value, max_chars)
    if _range_items(tree, 1) > MAX_RANGE_ITEMS:
        raise BudgetExceeded(f"loops over constant ranges run past {MAX_RANGE_ITEMS} items in all")


def _range_items(node: nodes.Node, times: int) -> int:
    """The range() items `node` makes when run `times` times (constant ranges only)."""
    total = 0
    if isinstance(node, nodes.Call):
        length = _constant_range(node)
        total += times * (length or 0)
    if isinstance(node, nodes.For):
        length = _constant_range(node.iter)
        total += _range_items(node.iter, times)
        inner = times * (length if length is not None else 1)
        for child in node.body:
            total += _range_items(child, inner)
        for child in node.else_:
            total += _range_items(child, times)
        return total
    for child in node.iter_child_nodes():
        total += _range_items(child, times)
    return total


def _constant_range(node: nodes.Node) -> int | None:
    if not (isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "range"):
        return None
    if node.kwargs or node.dyn_args or node.dyn_kwargs:
        return None
    if not all(isinstance(arg, nodes.Const) and _is_int(arg.value) for arg in node.args):
        return None
    try:
        return len(range(*(arg.value for arg in node.args)))  # type: ignore[attr-defined]
    except (TypeError, ValueError, OverflowError):
        return None
