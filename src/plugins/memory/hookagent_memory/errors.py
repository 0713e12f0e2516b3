"""The memory plugin's errors."""

from __future__ import annotations

from hookagent.errors import AgentError, ConfigurationError


class MemoryOptionsError(ConfigurationError):
    """``plugin_options["memory"]`` (or a ``MemoryPlugin`` argument) that cannot be used."""


class MemoryToolError(AgentError, ValueError):
    """A memory tool's argument that cannot be used (an empty or over-long note or query)."""


class NoWorkspace(AgentError):
    """A memory tool was called where no workspace plugin provides a workspace."""
