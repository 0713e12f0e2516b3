"""Unit conversion from fixed tables: length, mass, time and temperature."""

from __future__ import annotations

import math

# unit -> (dimension, factor to the dimension's base unit)
_LINEAR: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mg": ("mass", 1e-6),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "t": ("mass", 1000.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "ms": ("time", 0.001),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "day": ("time", 86400.0),
}
# temperatures are affine: kelvin = (value + offset) * factor
_TEMPERATURE: dict[str, tuple[float, float]] = {
    "K": (0.0, 1.0),
    "C": (273.15, 1.0),
    "F": (459.67, 5.0 / 9.0),
}
UNITS: tuple[str, ...] = (*_LINEAR, *_TEMPERATURE)
"""Every unit name accepted (case-sensitive: ``t`` is a tonne, ``K`` a kelvin)."""


class UnitError(ValueError):
    """An unknown unit, or two units of different dimensions."""


def _dimension(unit: str) -> str:
    if unit in _LINEAR:
        return _LINEAR[unit][0]
    if unit in _TEMPERATURE:
        return "temperature"
    raise UnitError(f"unknown unit {unit!r}; known units: {', '.join(UNITS)}")


def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value between units of length, mass, time or temperature (C, F, K).

    The result is rounded to 10 decimal places and 12 significant digits.
    """
    if not math.isfinite(value):
        raise UnitError(f"value must be a finite number, got {value!r}")
    source, target = _dimension(from_unit), _dimension(to_unit)
    if source != target:
        raise UnitError(f"cannot convert {source} ({from_unit}) to {target} ({to_unit})")
    if source == "temperature":
        offset, factor = _TEMPERATURE[from_unit]
        kelvin = (value + offset) * factor
        if kelvin < 0:
            raise UnitError(f"{value} {from_unit} is below absolute zero")
        offset, factor = _TEMPERATURE[to_unit]
        result = kelvin / factor - offset
    else:
        result = value * _LINEAR[from_unit][1] / _LINEAR[to_unit][1]
    # at most 10 decimals and 12 significant digits: no 0.30000000000000004 or 5.7e-14 noise
    return float(f"{round(result, 10):.12g}")
