"""OpenTelemetry traces, metrics and correlated logs for hookagent runs (plugin ``otel``).

Built on ``opentelemetry-api`` only: the SDK, exporters and sampling are the application's.
The names from ``logs`` and ``plugin`` are imported on first use (``hookagent.lazy``): plugin
discovery imports this package in every process, and they pull in OpenTelemetry.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING

from hookagent.lazy import lazy_exports

from .errors import OtelConfigError
from .options import OtelOptions

if TYPE_CHECKING:
    from .logs import (
        Correlation,
        CorrelationFilter,
        current_correlation,
        install_log_correlation,
        structlog_processor,
        uninstall_log_correlation,
    )
    from .plugin import OtelPlugin

__all__ = [
    "Correlation",
    "CorrelationFilter",
    "OtelConfigError",
    "OtelOptions",
    "OtelPlugin",
    "__version__",
    "current_correlation",
    "install_log_correlation",
    "structlog_processor",
    "uninstall_log_correlation",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Correlation": ".logs",
        "CorrelationFilter": ".logs",
        "current_correlation": ".logs",
        "install_log_correlation": ".logs",
        "structlog_processor": ".logs",
        "uninstall_log_correlation": ".logs",
        "OtelPlugin": ".plugin",
    },
)
