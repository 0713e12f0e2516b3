"""Test helpers for plugin authors (also registered as the ``hookagent`` pytest plugin)."""

from .conformance import StoreConformance, every_block_message, full_state
from .corpus import ENVELOPES, HOSTILE_IDS, INVALID_IDS

__all__ = [
    "ENVELOPES",
    "HOSTILE_IDS",
    "INVALID_IDS",
    "StoreConformance",
    "every_block_message",
    "full_state",
]
