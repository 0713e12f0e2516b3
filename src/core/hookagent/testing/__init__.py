"""Test helpers for plugin authors (also registered as the ``hookagent`` pytest plugin)."""

from .conformance import StoreConformance, every_block_message, full_state
from .corpus import ENVELOPES, HOSTILE_IDS, INVALID_IDS
from .crash import CrashReport, kill_mid_save
from .recorder import HookCall, HookRecorder
from .scripted import ScriptedModel, tool_call

__all__ = [
    "ENVELOPES",
    "HOSTILE_IDS",
    "INVALID_IDS",
    "CrashReport",
    "HookCall",
    "HookRecorder",
    "ScriptedModel",
    "StoreConformance",
    "every_block_message",
    "full_state",
    "kill_mid_save",
    "tool_call",
]
