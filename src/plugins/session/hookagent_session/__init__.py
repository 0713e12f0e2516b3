"""hookagent-session: ``AgentSession``, a durable inbox of commands per session, and the
``SessionHost`` whose dispatcher runs them in order, once, across replicas.

    async with SessionHost(config, inbox="redis://127.0.0.1:6379/1") as host:
        session = host.session("alice", "s1")
        view = await session.submit("hello", idempotency_key="req-1")
        done = await session.wait(view.command_id)

See docs/session.md.
"""

from .errors import (
    CommandRejected,
    HostNotRunning,
    IdempotencyConflict,
    InboxBusy,
    InvalidCommand,
    NotRunning,
    SessionError,
    StaleRun,
    UnknownCommand,
    UnknownRun,
    WaitTimeout,
)
from .host import SessionHost
from .model import FINAL, CommandKind, TaskStatus, TaskView, command_id_for, run_id_for
from .session import AgentSession

__all__ = [
    "FINAL",
    "AgentSession",
    "CommandKind",
    "CommandRejected",
    "HostNotRunning",
    "IdempotencyConflict",
    "InboxBusy",
    "InvalidCommand",
    "NotRunning",
    "SessionError",
    "SessionHost",
    "StaleRun",
    "TaskStatus",
    "TaskView",
    "UnknownCommand",
    "UnknownRun",
    "WaitTimeout",
    "command_id_for",
    "run_id_for",
]
