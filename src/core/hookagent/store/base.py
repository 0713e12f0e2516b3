"""The state-store contract: versioned (user_id, session_id, key) slots with compare-and-set.

A store plugin implements ``AgentStateStore`` (async). The kernel never writes without a
version: ``save_if_version`` creates only if absent (expected 0), updates only at the expected
version, or, with ``UNCONDITIONAL``, overwrites and still bumps the version.

Writes proportional to the change: ``state.context.unchanged_prefix`` tells how many leading
messages are the ones stored at the version the state was loaded at. A store may append only
``state.context[unchanged_prefix:]`` when its compare-and-set succeeds at that version; with a
prefix shorter than what it holds (clear, compaction) it rewrites the history; a state
decoded from JSON has a prefix of 0, so it is rewritten too.

A state is bound to its slot (``ids.check_state_slot`` on save, ``ids.check_loaded_slot``
on load), and a slot written by a newer schema is never overwritten
(``ids.check_schema_writable``). Every load and save error names the slot (``ids.slot_name``).
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable

import attrs

from ..state import AgentState

AGENT_STATE_KEY = "agent_state"


class _Unconditional(enum.Enum):
    UNCONDITIONAL = "unconditional"

    def __repr__(self) -> str:
        return "UNCONDITIONAL"


UNCONDITIONAL = _Unconditional.UNCONDITIONAL
"""``expected_version`` for a save that overwrites whatever is stored (it bumps the version)."""

ExpectedVersion = int | _Unconditional


class ConflictPolicy(enum.Enum):
    """What the agent does when its compare-and-set save loses."""

    FAIL = "fail"
    """Raise ``VersionConflict`` naming user, session, key and the expected version."""
    OVERWRITE = "overwrite"
    """Write anyway (``UNCONDITIONAL``): last writer wins. Only for single-writer setups."""
    APPEND_MERGE = "append_merge"
    """Reload, append this call's new messages after what is stored, retry once, then raise."""


@attrs.frozen
class Versioned:
    """A state and the version it was read at; ``(None, 0)`` for an absent slot."""

    state: AgentState | None
    version: int


@attrs.frozen
class Fence:
    """A lease's proof of ownership, checked inside a store's compare-and-set.

    The one fence rule, on every save form (``UNCONDITIONAL`` included): a save with a
    fence is ``Fenced`` when its epoch is older than the newest epoch the store recorded for
    the slot, or equal to it with another owner; a newer epoch is accepted and recorded; a
    save without a fence is not fence-checked.
    """

    epoch: int
    owner: str


@attrs.frozen
class SessionPage:
    """One page of a user's session ids; ``next_cursor`` is None on the last page."""

    session_ids: tuple[str, ...]
    next_cursor: str | None = None


@runtime_checkable
class AgentStateStore(Protocol):
    """The async contract every store implements (see docs/stores.md).

    Every method takes the user_id: no method of one user may read, list, change or
    delete another user's slots. Ids are user data: any str of 1..``MAX_ID_LENGTH``
    characters without NUL is valid and must round-trip (``check_id``); the anonymous
    partition is ``user_id == ""``.
    """

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned: ...

    async def save_if_version(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected_version: ExpectedVersion,
        *,
        key: str = AGENT_STATE_KEY,
        fence: Fence | None = None,
    ) -> int:
        """Write and return the new version, or raise ``VersionConflict``/``Fenced``.

        On success the store calls ``state.context.mark_committed()``.
        """
        ...

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        """Delete one key of the slot, or every key when ``key`` is None; True if any existed."""
        ...

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool: ...

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        """The user's session ids in a stable order, without loading any payload;
        ``cursor=""`` is the first page, like None."""
        ...

    async def aclose(self) -> None: ...
