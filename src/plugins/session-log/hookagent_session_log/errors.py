"""The session-log plugin's errors; all are ``hookagent`` error types underneath."""

from __future__ import annotations

from collections.abc import Sequence

from hookagent import ToolUseBlock
from hookagent.errors import AgentError, DuplicateRunId, LogCorrupt, SessionLogError
from hookagent.store.ids import slot_name


class UncertainToolCalls(SessionLogError):
    """The log shows tools dispatched with no recorded outcome (a crash mid-tool): whether
    they ran is unknown, so the session refuses new runs and admin changes until an
    operator says what happened (``SessionLogAdmin.reconcile`` / ``hookagent log
    reconcile``)."""

    def __init__(self, user_id: str, session_id: str, uses: Sequence[ToolUseBlock]) -> None:
        self.user_id, self.session_id = user_id, session_id
        self.uncertain = tuple(uses)
        listing = ", ".join(f"{u.name} ({u.id})" for u in uses)
        super().__init__(
            f"{slot_name(user_id, session_id, 'log')}: {len(uses)} tool call(s) were dispatched "
            f"and never finished: {listing}. Reconcile them first: hookagent log reconcile "
            f"--user {user_id!r} --session {session_id!r} ID=success|error|interrupted[:TEXT] "
            "--reason '...'"
        )


class UnknownRequiredEvent(LogCorrupt):
    """The log holds a required event type this version does not know: rebuilding without
    it would be wrong, so recovery refuses (upgrade the plugin that wrote it)."""


class ReconcileMismatch(SessionLogError, ValueError):
    """``reconcile`` must name exactly the uncertain tool calls, no more and no fewer."""


class TurnAlreadyCompleted(AgentError):
    """A run carrying the turn_id of a turn the log shows completed (a resent request)."""


class RunAlreadyRecorded(DuplicateRunId):
    """A run_id the session's log already recorded (a finished run is sealed for ever)."""


class AdminRefused(SessionLogError):
    """An admin change the log refuses: a history change while interactions are pending."""
