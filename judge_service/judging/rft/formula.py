"""A multi grader's `calculate_output`: arithmetic over its graders' scores, parsed, never evaluated as
code.

Accepted: numbers, the graders' names, + - * / and ^ (or **) for powers, unary minus, parentheses, and the
functions min, max, abs, floor, ceil, exp, sqrt, log. Anything else (attributes, subscripts, calls of other
names, `__import__`, comparisons, strings) is a `FormulaError` before anything is computed.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Collection, Mapping

MAX_FORMULA_CHARS = 2000
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
    ast.BitXor: lambda a, b: a**b,  # `^` is the documented power operator
}


class FormulaError(ValueError):
    """The formula is not arithmetic over the graders' names (`formula_parse_error`)."""


def parse(formula: str, names: Collection[str]) -> ast.Expression:
    """The checked syntax tree; FormulaError naming what is not allowed."""
    if len(formula) > MAX_FORMULA_CHARS:
        raise FormulaError(f"the formula is longer than {MAX_FORMULA_CHARS} characters")
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"cannot parse {formula[:80]!r}: {exc.msg}") from exc
    except (RecursionError, MemoryError) as exc:
        raise FormulaError("the formula is nested too deeply") from exc
    for node in ast.walk(tree):
        _check_node(node, names)
    return tree


def _check_node(node: ast.AST, names: Collection[str]) -> None:
    if isinstance(node, ast.Expression | ast.Load | ast.operator | ast.unaryop):
        if isinstance(node, ast.operator) and type(node) not in _BINARY:
            raise FormulaError(f"operator {type(node).__name__} is not allowed")
        if isinstance(node, ast.unaryop) and not isinstance(node, ast.USub | ast.UAdd):
            raise FormulaError(f"operator {type(node).__name__} is not allowed")
        return
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise FormulaError(f"{node.value!r} is not a number")
        return
    if isinstance(node, ast.Name):
        if node.id not in names and node.id not in _FUNCTIONS:
            raise FormulaError(f"unknown name {node.id!r}; the formula may use: {', '.join(sorted(names))}")
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            raise FormulaError(f"only the functions {', '.join(_FUNCTIONS)} may be called")
        if node.keywords or not node.args:
            raise FormulaError(f"{node.func.id}() takes positional arguments only")
        return
    raise FormulaError(f"{type(node).__name__} is not allowed in a formula (numbers and arithmetic only)")


def evaluate(tree: ast.Expression, values: Mapping[str, float]) -> float:
    """The formula's value; ArithmeticError or ValueError (division by zero, log of 0) as computed."""
    try:
        result = _value(tree.body, values)
    except RecursionError as exc:
        raise ArithmeticError("the formula is nested too deeply to compute") from exc
    if not math.isfinite(result):
        raise ArithmeticError(f"the formula's value is {result}")
    return float(result)


def _value(node: ast.expr, values: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise FormulaError(f"{node.value!r} is not a number")  # unreachable after parse()
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id in _FUNCTIONS:
            raise FormulaError(f"{node.id} is a function; call it")
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, values), _value(node.right, values)
        if type(node.op) in (ast.Pow, ast.BitXor) and abs(right) > 1000:
            raise ArithmeticError("exponents beyond 1000 are not computed")
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):  # a negative number to a fractional power
            raise ArithmeticError("the formula's value is not a real number")
        return float(result)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return float(_FUNCTIONS[node.func.id](*(_value(arg, values) for arg in node.args)))
    raise FormulaError(f"{type(node).__name__} is not allowed")  # unreachable after parse()
