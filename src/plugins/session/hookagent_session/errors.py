"""The session service's errors; all are ``hookagent`` error types underneath.

A refused command is never half-accepted: an error raised by ``AgentSession`` means the
inbox holds nothing new (or, for a resent idempotency key, exactly what it held before).
"""

from __future__ import annotations

from hookagent.errors import AgentError


class SessionError(AgentError):
    """Base of every error the session service raises."""


class InvalidCommand(SessionError, ValueError):
    """A command's arguments are malformed (empty input, an answer of the wrong type, an
    idempotency key that is not a usable id, ...); nothing was recorded."""


class IdempotencyConflict(SessionError):
    """The idempotency key was already used on this session for a command with other content
    (another kind, input or answer). A retry must resend exactly the same command."""

    def __init__(self, message: str, *, command_id: str, idempotency_key: str) -> None:
        super().__init__(message)
        self.command_id = command_id
        self.idempotency_key = idempotency_key


class CommandRejected(SessionError):
    """The command cannot apply to the session as it is now (nothing was recorded when this
    is raised by ``AgentSession``; a command rejected later by the dispatcher ends with the
    task status ``rejected`` and this error's text)."""


class NotRunning(CommandRejected):
    """``steer`` or ``interrupt`` while no run of the session is running."""


class StaleRun(CommandRejected):
    """``interrupt(expected_run_id)`` when the running run is not the one the caller saw (a
    newer one started meanwhile): the newer run is never stopped by a stale request."""

    def __init__(self, message: str, *, expected_run_id: str, running_run_id: str | None) -> None:
        super().__init__(message)
        self.expected_run_id = expected_run_id
        self.running_run_id = running_run_id


class UnknownCommand(SessionError, LookupError):
    """No command with that id in this session's inbox."""


class UnknownRun(SessionError, LookupError):
    """``live_events(run_id)``: no such run is executing in this process."""


class InboxBusy(SessionError):
    """The inbox's append lease stayed held by other writers past the append timeout."""


class HostNotRunning(SessionError):
    """The ``SessionHost`` is not entered (``async with host``), or is closing."""


class WaitTimeout(SessionError, TimeoutError):
    """``AgentSession.wait`` reached its timeout before the command ended; the command goes on."""
