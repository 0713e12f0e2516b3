"""The session log's contract (EVENT_LOG mode): what backends implement and plugins use.

The recorder, the projection and the operator tools are the ``hookagent-session-log``
plugin's; the backends are in the store plugins; this package is the seam between them
(docs/session-log.md).
"""

from .base import (
    CHECKPOINT,
    DEFAULT_LEASE_SECONDS,
    LOG_SCHEMA_VERSION,
    CommitResult,
    LogEvent,
    LogHead,
    LogWriter,
    SessionLog,
    SessionPage,
)
from .batch import (
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    BuiltBatch,
    Row,
    batch_digest,
    built_batch,
    decode_batch,
    decode_rows,
    encode_batch,
    point_read,
    rows_after,
)
from .memory import InMemorySessionLog
from .open import collect_session_logs, open_session_log, session_log_registration
from .rules import CommitPlan, encode_commit, holds, plan_acquire, plan_commit

__all__ = [
    "CHECKPOINT",
    "DEFAULT_LEASE_SECONDS",
    "LOG_SCHEMA_VERSION",
    "MAX_BATCH_BYTES",
    "MAX_BATCH_EVENTS",
    "BuiltBatch",
    "CommitPlan",
    "CommitResult",
    "InMemorySessionLog",
    "LogEvent",
    "LogHead",
    "LogWriter",
    "Row",
    "SessionLog",
    "SessionPage",
    "batch_digest",
    "built_batch",
    "collect_session_logs",
    "decode_batch",
    "decode_rows",
    "encode_batch",
    "encode_commit",
    "holds",
    "open_session_log",
    "plan_acquire",
    "plan_commit",
    "point_read",
    "rows_after",
    "session_log_registration",
]
