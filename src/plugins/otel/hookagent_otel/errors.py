"""The otel plugin's own errors."""

from __future__ import annotations

from hookagent.errors import PluginError


class OtelConfigError(PluginError, ValueError):
    """An option of ``OtelPlugin`` (or its environment variable) that cannot be used."""
