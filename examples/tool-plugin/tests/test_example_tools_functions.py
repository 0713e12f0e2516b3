"""The tools as plain functions: no agent needed to test what they compute and refuse."""

from __future__ import annotations

import pytest
from hookagent_example_tools import (
    CalculatorError,
    UnitError,
    calculate,
    convert_units,
    word_count,
)
from hookagent_example_tools.calculator import MAX_EXPRESSION_CHARS


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2+3", 5),
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("-3 ** 2", -9),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("7 / 2", 3.5),
        ("2 ** -1", 0.5),
        ("+1.5e3", 1500.0),
        ("10 ** 400", 10**400),
    ],
)
def test_calculator_computes_arithmetic(expression: str, expected: float) -> None:
    assert calculate(expression) == expected


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os').system('id')", "Call is not allowed"),
        ("os", "Name is not allowed"),
        ("(1).__class__", "Attribute is not allowed"),
        ("'a' * 3", "only numbers"),
        ("True + 1", "only numbers"),
        ("1 < 2", "Compare is not allowed"),
        ("[1, 2]", "List is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("1 if 1 else 2", "IfExp is not allowed"),
        ("1 << 3", "BinOp is not allowed"),
        ("1; 2", "not an arithmetic expression"),
        ("2 +", "not an arithmetic expression"),
        ("", "empty"),
        ("1/0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("9 ** 9 ** 9", "too large"),
        ("2 ** 5000", "too large"),
        ("1e308 * 10", "not a finite number"),
        ("0.5 ** -5000", "too large"),
        ("(-8) ** 0.5", "not a real number"),
        ("1+" * 150 + "1", "characters, over"),
    ],
)
def test_calculator_refuses_anything_but_bounded_arithmetic(expression: str, reason: str) -> None:
    with pytest.raises(CalculatorError, match=reason):
        calculate(expression)


def test_calculator_length_limit_is_inclusive() -> None:
    expression = "1" + "+1" * ((MAX_EXPRESSION_CHARS - 1) // 2)
    assert len(expression) <= MAX_EXPRESSION_CHARS
    assert calculate(expression) == (MAX_EXPRESSION_CHARS - 1) // 2 + 1


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (1, "km", "m", 1000.0),
        (1, "mi", "km", 1.609344),
        (12, "in", "ft", 1.0),
        (1, "lb", "g", 453.59237),
        (90, "min", "h", 1.5),
        (100, "C", "F", 212.0),
        (32, "F", "C", 0.0),
        (0, "K", "C", -273.15),
        (0.1, "m", "cm", 10.0),
    ],
)
def test_convert_units(value: float, source: str, target: str, expected: float) -> None:
    assert convert_units(value, source, target) == expected


@pytest.mark.parametrize(
    ("value", "source", "target", "reason"),
    [
        (1, "parsec", "m", "unknown unit 'parsec'"),
        (1, "m", "kg", "cannot convert length"),
        (1, "C", "s", "cannot convert temperature"),
        (-500, "C", "K", "below absolute zero"),
        (float("nan"), "m", "cm", "finite"),
    ],
)
def test_convert_units_refuses(value: float, source: str, target: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason):
        convert_units(value, source, target)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("one", 1), ("  two  words ", 2), ("line\nbreaks\tand tabs", 4)],
)
def test_word_count(text: str, expected: int) -> None:
    assert word_count(text) == expected
