"""Typed errors: every failure a user or a plugin can meet has a class of its own.

Two families: ``SessionStoreError`` for everything about stored state (ids, payloads,
versions, availability), ``AgentError`` for the loop, tools, models and plugins.
Both derive from ``HookagentError`` so that one ``except`` can catch the lot.
"""

from __future__ import annotations

import pluggy


class HookagentError(Exception):
    """Base of every error hookagent raises on purpose."""


# --------------------------------------------------------------------------- state & stores


class SessionStoreError(HookagentError):
    """Base of every error about stored state."""


class InvalidIdentifier(SessionStoreError, ValueError):
    """A user_id, session_id, key or run_id that cannot be used (empty, NUL, too long, not str)."""


class InvalidStoreArgument(SessionStoreError, ValueError):
    """A store method's argument of the wrong type or range: expected_version, limit, cursor,
    fence. Checked before anything is read or written."""


class InvalidState(SessionStoreError, ValueError):
    """A state or message that does not fit the schema (names the field that is wrong)."""


class CorruptState(InvalidState):
    """Stored bytes that cannot be decoded: truncated, malformed JSON, bad checksum."""


class StateTooLarge(InvalidState):
    """A payload over a documented limit (total bytes, message bytes, nesting depth)."""


class UnsupportedSchemaVersion(InvalidState):
    """A state written by a newer hookagent than this one; never overwritten by an older reader."""


class StateSlotMismatch(InvalidStoreArgument):
    """A save whose state says another (user_id, session_id) than the slot it is saved to.

    Refused before anything is written; re-address the state first
    (``attrs.evolve(state, user_id=..., session_id=...)``) when moving a session on purpose.
    """


class VersionConflict(SessionStoreError):
    """A compare-and-set save found another version than the one it expected."""

    def __init__(
        self, user_id: str, session_id: str, key: str, expected: int, actual: int | None = None
    ) -> None:
        self.user_id, self.session_id, self.key = user_id, session_id, key
        self.expected, self.actual = expected, actual
        found = "unknown" if actual is None else str(actual)
        super().__init__(
            f"version conflict on user_id={user_id!r} session_id={session_id!r} key={key!r}: "
            f"expected version {expected}, store has {found}"
        )


class Fenced(SessionStoreError):
    """A write by a holder whose lease was taken over (its fencing epoch is stale)."""


class SessionBusy(SessionStoreError):
    """The session's gate could not be acquired in time."""


class StoreUnavailable(SessionStoreError):
    """The backing service cannot be reached, or the outcome of an operation is unknown."""


class StorageFull(SessionStoreError):
    """The storage medium is full (ENOSPC, EFBIG); nothing was written."""


class StorageDurabilityError(SessionStoreError):
    """fsync failed: the data may not be durable. The store handle is poisoned, never retried."""


class SessionLogError(SessionStoreError):
    """Base of the session log's errors (``hookagent.sessionlog``)."""


class LeaseHeld(SessionLogError):
    """``acquire`` found another owner's unexpired writer lease on the session's log."""


class LogFenced(SessionLogError, Fenced):
    """A commit, renewal or release by a writer that lost its lease (expired, or taken over:
    its epoch is no longer the head's)."""


class OwnerSealed(SessionLogError):
    """An owner id that ``seal`` fenced forever on this session (a finished run's id)."""


class StalePrefix(SessionLogError):
    """A commit whose ``expected_seq`` is not the head's seq: the writer's view is stale."""

    def __init__(self, message: str, *, expected: int, actual: int) -> None:
        super().__init__(message)
        self.expected, self.actual = expected, actual


class BatchConflict(SessionLogError):
    """A ``batch_id`` already committed with other content (a retry must resend the same)."""


class LogCorrupt(CorruptState, SessionLogError):
    """The log cannot be read as written: a head pointing at a missing commit, a gap in the
    sequence, undecodable bytes. The log fails closed: nothing is read past it."""


class StoreConfigurationError(SessionStoreError, ValueError):
    """A store URL or option that cannot be served (unknown scheme, unsafe mode)."""


# --------------------------------------------------------------------------- agent & plugins


class AgentError(HookagentError):
    """Base of errors raised by the agent loop."""


class InvalidMessage(AgentError, TypeError):
    """Input to a call that is not a non-empty sequence of ``Msg`` (or str)."""


class ModelError(AgentError):
    """The model raised, or returned something that is not a ``ModelResponse``."""


class ModelAuthError(ModelError):
    """The provider refused the credentials (HTTP 401/403)."""


class ModelRateLimited(ModelError):
    """The provider kept answering 429 after the retries."""


class ContextLengthExceeded(ModelError):
    """The request does not fit the model's context window."""


class MalformedModelResponse(ModelError):
    """The provider answered something that is not a valid response (bad JSON, bad tool call)."""


class ModelUnavailable(ModelError):
    """Timeouts, connection errors or 5xx answers that outlasted the retries."""


class AgentClosed(AgentError):
    """The agent is shutting down or closed and accepts no new call."""


class DuplicateRunId(AgentError):
    """A top-level run with this run_id is already executing for the same user."""


class RunCancelled(AgentError):
    """The run was cancelled (before start it never executed)."""


class Interrupted(Exception):
    """Raised at a cooperative checkpoint after an interrupt; the kernel turns it into a
    recovery reply. Middlewares and tools must let it through (catch ``ModelError`` or
    your own errors, never bare ``Exception``, around ``call_next``)."""


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool's schema (shown to the model, not raised)."""


class ToolSuspended(Exception):
    """Raised by a tool that waits for an outside result; the kernel turns it into a
    pending ``external_result`` interaction (answered later with ``ExternalResult``)."""

    def __init__(self, prompt: str = "", data: dict[str, object] | None = None) -> None:
        super().__init__(prompt)
        self.prompt, self.data = prompt, dict(data or {})


class AnswerError(AgentError, ValueError):
    """An answer to a suspended turn that cannot be applied; nothing was changed."""


class UnknownInteraction(AnswerError):
    """An answer whose tool_use id matches no pending interaction (or one already answered)."""


class DuplicateAnswer(AnswerError):
    """Two answers to the same tool_use id in one call."""


class TurnMismatch(AnswerError):
    """Answers sent with a ``ctx.turn_id`` other than the suspended turn's."""


class ToolDefinitionError(AgentError, TypeError):
    """A tool whose signature cannot be turned into a JSON schema, or a duplicate tool name."""


class PluginError(HookagentError):
    """A plugin failed to load or broke the hook contract."""


class PluginLoadError(PluginError):
    """An entry point failed to import (strict mode), naming plugin, distribution and cause."""


class HookContractError(PluginError, TypeError):
    """A hook implementation returned something its hook does not accept.

    ``hook`` names the hook and ``plugin`` the plugin when the kernel can tell which one.
    """

    def __init__(self, message: str, *, hook: str | None = None, plugin: str | None = None):
        super().__init__(message)
        self.hook, self.plugin = hook, plugin


class PluginValidationError(PluginError, pluggy.PluginValidationError):
    """A ``hookagent_*`` implementation no hook specification knows (a misspelled hook), or
    one whose arguments the specification does not have. ``plugin`` and ``hook`` name it."""

    def __init__(self, plugin: object, message: str, *, hook: str | None = None) -> None:
        pluggy.PluginValidationError.__init__(self, plugin, message)
        self.hook = hook


class ConfigurationError(AgentError, ValueError):
    """A configuration that cannot work (a plugin's bad option, an impossible combination);
    raised by ``config.build()`` through ``hookagent_configure``, naming what and why."""


# --------------------------------------------------------------------------- workspace


class WorkspaceError(AgentError):
    """Base of the errors a ``Workspace`` raises."""


class WorkspacePathError(WorkspaceError, ValueError):
    """A path that leaves the workspace (``..``, absolute, a link outside) or is not a
    valid name; nothing was read or written."""


class WorkspaceFileNotFound(WorkspaceError, FileNotFoundError):
    """No file at that path in the workspace."""


class WorkspaceLimitExceeded(WorkspaceError):
    """A file, write or listing over the workspace's limits; nothing was written."""
