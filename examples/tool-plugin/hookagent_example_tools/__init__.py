"""An example hookagent tool plugin, written the way a third party would write one.

The tools are plain functions (their JSON schema comes from their signatures); ``plugin``
holds the hook implementations that the ``example-tools`` entry point registers.
"""

from .audit import AuditEntry, AuditLog, AuditMiddleware
from .calculator import CalculatorError, calculate, calculator
from .plugin import ExampleTools
from .text import word_count
from .units import UnitError, convert_units

__all__ = [
    "AuditEntry",
    "AuditLog",
    "AuditMiddleware",
    "CalculatorError",
    "ExampleTools",
    "UnitError",
    "calculate",
    "calculator",
    "convert_units",
    "word_count",
]
