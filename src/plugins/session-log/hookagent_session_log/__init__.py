"""hookagent-session-log: the session log as the state's authority (EVENT_LOG mode).

``AgentConfig(session_log="file:///var/lib/app/log")`` (or a Redis or SQL URL, or a
``hookagent.sessionlog.SessionLog``) records every run in a fenced, append-only journal per
session and rebuilds the state from it; ``SessionLogAdmin`` is the operator's side.
"""

from .admin import (
    FileWatermark,
    JsonlSink,
    LogNotEmpty,
    SessionLogAdmin,
    Sink,
    ToolOutcome,
    Watermark,
)
from .errors import (
    AdminRefused,
    ReconcileMismatch,
    RunAlreadyRecorded,
    TurnAlreadyCompleted,
    UncertainToolCalls,
    UnknownRequiredEvent,
)
from .projection import Projection
from .store import LogBackedStore

__all__ = [
    "AdminRefused",
    "FileWatermark",
    "JsonlSink",
    "LogBackedStore",
    "LogNotEmpty",
    "Projection",
    "ReconcileMismatch",
    "RunAlreadyRecorded",
    "SessionLogAdmin",
    "Sink",
    "ToolOutcome",
    "TurnAlreadyCompleted",
    "UncertainToolCalls",
    "UnknownRequiredEvent",
    "Watermark",
]
