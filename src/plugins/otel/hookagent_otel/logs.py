"""Log correlation: every record emitted inside a run carries its run_id, turn_id, session_id.

The run's identity lives in a contextvar that the plugin sets when the run starts and resets
when it ends, so a tool's own ``logging`` calls (in a worker thread too: anyio copies the
context) are correlated without the tool knowing about telemetry.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, MutableMapping
from typing import Any

import attrs
from opentelemetry import trace

FIELDS = ("run_id", "turn_id", "session_id", "agent_id")


@attrs.frozen
class Correlation:
    """The identity of the run a record was emitted in (user_id is never put in logs)."""

    run_id: str
    turn_id: str | None
    session_id: str
    agent_id: str


_current: contextvars.ContextVar[Correlation | None] = contextvars.ContextVar(
    "hookagent_otel_correlation", default=None
)


def current_correlation() -> Correlation | None:
    """The run this code runs inside, or None outside any run."""
    return _current.get()


def set_correlation(value: Correlation | None) -> contextvars.Token[Correlation | None]:
    return _current.set(value)


def reset_correlation(token: contextvars.Token[Correlation | None]) -> None:
    try:
        _current.reset(token)
    except ValueError:  # the end event came in another context: never break the run
        _current.set(None)


def _fields() -> dict[str, str]:
    found = _current.get()
    out = {name: "" for name in FIELDS}
    if found is not None:
        out.update(
            run_id=found.run_id,
            turn_id=found.turn_id or "",
            session_id=found.session_id,
            agent_id=found.agent_id,
        )
    span = trace.get_current_span().get_span_context()
    out["trace_id"] = format(span.trace_id, "032x") if span.is_valid else ""
    out["span_id"] = format(span.span_id, "016x") if span.is_valid else ""
    return out


class CorrelationFilter(logging.Filter):
    """Adds ``run_id``, ``turn_id``, ``session_id``, ``agent_id``, ``trace_id`` and ``span_id``
    to every record it sees (empty strings outside a run); never drops a record.

    A filter on a *handler* sees every record that handler emits; on a logger it sees only
    that logger's own records. ``install_log_correlation()`` covers every logger at once.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _fields().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


_installed: list[Callable[..., logging.LogRecord]] = []


def install_log_correlation() -> None:
    """The one-liner: every ``LogRecord`` created from now on carries the run's ids.

    Wraps the logging record factory (idempotent), so records of every logger and handler
    are correlated, including ones configured later. Use ``%(run_id)s`` in a format string.
    """
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        for name, value in _fields().items():
            setattr(record, name, value)
        return record

    _installed.append(previous)
    logging.setLogRecordFactory(factory)


def uninstall_log_correlation() -> None:
    """Restore the record factory that ``install_log_correlation`` replaced."""
    if _installed:
        logging.setLogRecordFactory(_installed.pop())


def structlog_processor(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: ``structlog.configure(processors=[structlog_processor, ...])``."""
    for name, value in _fields().items():
        event_dict.setdefault(name, value)
    return event_dict
