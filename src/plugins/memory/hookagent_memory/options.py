"""``plugin_options["memory"]``: which files, how many tokens, which end of a file to keep.

{"budget_tokens": 8000,                      # all files together, notices included
 "files": ["AGENTS.md", "MEMORY.md", "KNOWLEDGE.md"],
 "keep_tail": ["MEMORY.md"],                 # cut these from the front (newest notes last)
 "memory_file": "MEMORY.md",                 # where memory_write appends
 "max_note_chars": 4000, "max_search_results": 50}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .errors import MemoryOptionsError

DEFAULT_FILES = ("AGENTS.md", "MEMORY.md", "KNOWLEDGE.md")
MEMORY_FILE = "MEMORY.md"
KNOWN = (
    "budget_tokens",
    "files",
    "keep_tail",
    "memory_file",
    "max_note_chars",
    "max_search_results",
)
MIN_BUDGET = 64
"""A budget must leave room for at least a notice per file."""


def _path(value: object, what: str) -> str:
    """A file name the workspace will check again; refused here so that a typo fails at
    build time rather than on every request."""
    if not isinstance(value, str) or not value.strip("/."):
        raise MemoryOptionsError(f"{what} must be a non-empty relative path, got {value!r}")
    if value.startswith("/") or ".." in value.split("/") or "\x00" in value or "\\" in value:
        raise MemoryOptionsError(f"{what} {value!r} must be a relative path inside the workspace")
    return value


def _int(options: Mapping[str, Any], name: str, default: int, low: int) -> int:
    value = options.get(name, default)
    if type(value) is not int or value < low:
        raise MemoryOptionsError(f"memory option {name} must be an int >= {low}, got {value!r}")
    return value


@attrs.frozen
class MemorySettings:
    """The parsed options of one configuration."""

    budget_tokens: int = 8000
    files: tuple[str, ...] = DEFAULT_FILES
    keep_tail: frozenset[str] = frozenset({MEMORY_FILE})
    memory_file: str = MEMORY_FILE
    max_note_chars: int = 4000
    max_search_results: int = 50


def _names(options: Mapping[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = options.get(key, default)
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise MemoryOptionsError(f"memory option {key} must be a list of paths, got {value!r}")
    names = tuple(_path(v, f"memory option {key}: entry") for v in value)
    if len(set(names)) != len(names):
        raise MemoryOptionsError(f"memory option {key} names a file twice: {list(names)}")
    return names


def parse_options(options: object) -> MemorySettings:
    if not isinstance(options, Mapping):
        raise MemoryOptionsError(
            f'plugin_options["memory"] must be a mapping, got {type(options).__name__}'
        )
    unknown = sorted(set(options) - set(KNOWN))
    if unknown:
        raise MemoryOptionsError(
            f'plugin_options["memory"]: unknown option(s) {unknown}; known: {sorted(KNOWN)}'
        )
    files = _names(options, "files", DEFAULT_FILES)
    tail = _names(options, "keep_tail", (MEMORY_FILE,) if MEMORY_FILE in files else ())
    stray = sorted(set(tail) - set(files))
    if stray:
        raise MemoryOptionsError(f"memory option keep_tail names files not loaded: {stray}")
    return MemorySettings(
        budget_tokens=_int(options, "budget_tokens", 8000, MIN_BUDGET),
        files=files,
        keep_tail=frozenset(tail),
        memory_file=_path(options.get("memory_file", MEMORY_FILE), "memory option memory_file"),
        max_note_chars=_int(options, "max_note_chars", 4000, 1),
        max_search_results=_int(options, "max_search_results", 50, 1),
    )
