"""A calculator for the model that never runs code: ``ast`` parse, then an allowlist walk.

Only numbers, parentheses, unary +/- and the binary operators + - * / // % ** are accepted.
Anything else (names, calls, attributes, strings, comparisons...) is refused before
evaluation. Sizes are bounded so that a hostile expression cannot eat the CPU or memory.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

MAX_EXPRESSION_CHARS = 200
"""Longest expression accepted (also bounds the nesting depth)."""
MAX_RESULT_BITS = 4096
"""Largest integer (in bits) any intermediate result may have."""

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculatorError(ValueError):
    """The expression is not plain arithmetic, or its result is out of bounds."""


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression (numbers, + - * / // % ** and parentheses).

    This is the tool: the model sees the first paragraph of this docstring as its
    description. It answers with text because a JSON number cannot hold a 4096-bit integer.
    """
    return str(calculate(expression))


def calculate(expression: str) -> Number:
    """The value of an arithmetic expression, or ``CalculatorError`` saying what is wrong."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression is {len(expression)} characters, over {MAX_EXPRESSION_CHARS}"
        )
    if not expression.strip():
        raise CalculatorError("expression is empty")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc}") from None
    return _check_size(_eval(tree.body))


def _eval(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        value = node.value
        if type(value) not in (int, float):  # bool is an int subclass: refused on purpose
            raise CalculatorError(f"only numbers are allowed, got {value!r}")
        return _check_size(value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _check_size(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("result is too large") from None
    raise CalculatorError(f"{type(node).__name__} is not allowed in an arithmetic expression")


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse a power whose result would exceed the size limit, before computing it."""
    if abs(base) <= 1 or exponent <= 0:  # a negative exponent gives a float: overflow is caught
        return
    magnitude_bits = math.log2(abs(base)) * exponent
    if magnitude_bits > MAX_RESULT_BITS:
        raise CalculatorError(f"{base} ** {exponent} is too large (over {MAX_RESULT_BITS} bits)")


def _check_size(value: Number) -> Number:
    if isinstance(value, complex):  # (-8) ** 0.5
        raise CalculatorError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise CalculatorError(f"result is too large (over {MAX_RESULT_BITS} bits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("result is not a finite number")
    return value
