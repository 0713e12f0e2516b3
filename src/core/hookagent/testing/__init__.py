"""Test helpers for plugin authors (also registered as the ``hookagent`` pytest plugin).

The model double, the recorder and the corpora need only the kernel, so examples and
applications can use ``ScriptedModel`` after a plain ``pip install hookagent``. The store and
session-log conformance suites are sets of pytest tests: their names are imported on first use
(PEP 562) and need pytest, which is not a dependency of the kernel.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .corpus import ENVELOPES, HOSTILE_IDS, INVALID_IDS
from .crash import CrashReport, kill_mid_save
from .recorder import HookCall, HookRecorder
from .scripted import ScriptedModel, tool_call

if TYPE_CHECKING:
    from .conformance import StoreConformance, every_block_message, full_state
    from .log_conformance import SessionLogConformance

_NEEDS_PYTEST = {
    "StoreConformance": ".conformance",
    "every_block_message": ".conformance",
    "full_state": ".conformance",
    "SessionLogConformance": ".log_conformance",
}

__all__ = [
    "ENVELOPES",
    "HOSTILE_IDS",
    "INVALID_IDS",
    "CrashReport",
    "HookCall",
    "HookRecorder",
    "ScriptedModel",
    "SessionLogConformance",
    "StoreConformance",
    "every_block_message",
    "full_state",
    "kill_mid_save",
    "tool_call",
]


def __getattr__(name: str) -> Any:
    module = _NEEDS_PYTEST.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    except ModuleNotFoundError as exc:
        if exc.name != "pytest":
            raise
        raise ModuleNotFoundError(
            f"hookagent.testing.{name} is part of a conformance suite, which runs "
            "under pytest: pip install 'hookagent[testing]' (ScriptedModel, tool_call, HookRecorder and the "
            "id corpora need only hookagent)",
            name="pytest",
        ) from exc
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
