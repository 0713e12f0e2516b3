"""hookagent-memory: AGENTS.md, MEMORY.md and KNOWLEDGE.md from the workspace into every
reasoning request (within a token budget, never into the history), and the memory tools."""

from __future__ import annotations

from .budget import FileText, render
from .errors import MemoryOptionsError, MemoryToolError, NoWorkspace
from .options import DEFAULT_FILES, MemorySettings, parse_options
from .plugin import MODEL_ORDER, MemoryPlugin

__all__ = [
    "DEFAULT_FILES",
    "MODEL_ORDER",
    "FileText",
    "MemoryOptionsError",
    "MemoryPlugin",
    "MemorySettings",
    "MemoryToolError",
    "NoWorkspace",
    "parse_options",
    "render",
]
