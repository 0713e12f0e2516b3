"""OpenTelemetry traces, metrics and correlated logs for hookagent runs (plugin ``otel``).

Built on ``opentelemetry-api`` only: the SDK, exporters and sampling are the application's.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import OtelConfigError
from .logs import (
    Correlation,
    CorrelationFilter,
    current_correlation,
    install_log_correlation,
    structlog_processor,
    uninstall_log_correlation,
)
from .options import OtelOptions
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
