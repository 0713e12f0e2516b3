"""History compaction for hookagent: summaries validated before they are committed,
context-overflow recovery, and offloading of large tool results (docs/compaction.md)."""

from .cut import PINNED, SUMMARY_KEY
from .errors import (
    CompactionError,
    CompactionOptionsError,
    ContextBudgetExceeded,
    OffloadError,
)
from .offload import OffloadSkippedWarning, read_offloaded
from .options import CompactionOptions
from .summary import SUMMARY_HEADER
from .validate import CompactionProposal

__all__ = [
    "PINNED",
    "SUMMARY_HEADER",
    "SUMMARY_KEY",
    "CompactionError",
    "CompactionOptions",
    "CompactionOptionsError",
    "CompactionProposal",
    "ContextBudgetExceeded",
    "OffloadError",
    "OffloadSkippedWarning",
    "read_offloaded",
]
