"""The session-log contract: an append-only, fenced journal of events per (user, session).

A ``SessionLog`` backend keeps, for each session, a **head** (the last sequence number, the
writer lease and its fencing epoch, the last commit's id, the newest checkpoint's seq) and
**commits**: batches of events with contiguous sequence numbers. Its rules, which the
conformance suite (``hookagent.testing.SessionLogConformance``) checks on every backend:

* ``acquire(owner)`` gives a ``LogWriter`` whose ``epoch`` is the head's epoch + 1 (the
  fencing token); it fails with ``LeaseHeld`` while another owner's lease is unexpired and
  with ``OwnerSealed`` for an owner ``seal`` fenced. Re-acquiring by the same owner fences
  its older writer.
* ``commit(writer, batch_id, expected_seq, events)`` appends at ``head.seq + 1``: it is
  ``LogFenced`` unless the writer's epoch and owner are the head's and its lease is
  unexpired (checked inside the same atomic step as the write), ``StalePrefix`` when
  ``expected_seq != head.seq``, a no-op returning the first result when ``batch_id`` was
  committed with the same content, and ``BatchConflict`` when it was committed with other
  content. ``finish=True`` also ends the lease and seals the owner, atomically.
* The commit's bytes are durable **before** the head moves; a commit the head never reached
  (an orphan, left by a crash) is invisible and never read; a head pointing at a commit that
  is missing fails closed with ``LogCorrupt``.
* ``read_after(seq)`` returns the committed events after ``seq`` in order, never past the
  head.

Every method takes the user_id first; ids are checked with ``store.ids.check_id`` and
encoded with ``encode_id`` before they touch a key or a path, as for state stores. The
rules a backend shares (argument checks, the commit decision, the batch encoding) are in
``hookagent.sessionlog.rules`` and ``.batch`` so that a backend only stores bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ..messages import new_id

LOG_SCHEMA_VERSION = 1
"""The event envelope's ``schema_version`` this kernel writes and reads."""
DEFAULT_LEASE_SECONDS = 120.0
"""A run's writer lease (the reference's 2 minutes), renewed by its heartbeat."""
CHECKPOINT = "state/checkpoint"
"""The event type a backend indexes: the head keeps the newest one's seq."""


def _payload(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"an event payload is a mapping, got {type(value).__name__}")
    return value


@attrs.frozen
class LogEvent:
    """One fact in a session's log (the envelope of harness.md section 7).

    ``type`` is ``area/name`` (``message/appended``); applications namespace their own
    (``acme/review_note``). ``required`` events must be understood to rebuild the state:
    recovery refuses a log holding a required type it does not know, and keeps unknown
    optional ones. ``seq`` is 0 until the event is committed.
    """

    type: str
    payload: Mapping[str, Any] = attrs.field(factory=dict, converter=_payload)
    required: bool = True
    run_id: str | None = None
    turn_id: str | None = None
    event_id: str = attrs.field(factory=new_id)
    occurred_at: float = 0.0
    seq: int = 0
    schema_version: int = LOG_SCHEMA_VERSION


@attrs.frozen
class LogHead:
    """A session's head; ``seq == 0`` and ``epoch == 0`` for a log never written."""

    seq: int = 0
    epoch: int = 0
    owner: str | None = None
    lease_until: float = 0.0
    commit_id: str | None = None
    """The batch_id of the commit that moved the head last."""
    checkpoint_seq: int = 0
    """The seq of the newest ``state/checkpoint`` event (0: none)."""


@attrs.frozen
class LogWriter:
    """Proof of the writer lease: pass it to ``commit``, ``renew`` and ``release``."""

    user_id: str
    session_id: str
    owner: str
    epoch: int
    lease_until: float
    seq: int = 0
    """The head's seq when the lease was acquired (a writer checks its view against it)."""


@attrs.frozen
class CommitResult:
    """Where a commit landed: its events hold ``first_seq .. last_seq``."""

    first_seq: int
    last_seq: int
    head: LogHead
    duplicate: bool = False
    """True when ``batch_id`` was already committed with this content (nothing written)."""


@attrs.frozen
class SessionPage:
    """One page of a user's logged session ids; ``next_cursor`` is None on the last page."""

    session_ids: tuple[str, ...]
    next_cursor: str | None = None


@runtime_checkable
class SessionLog(Protocol):
    """The async contract every log backend implements (docs/session-log.md)."""

    locality: str
    """Who sees the log: ``"process"``, ``"host"`` or ``"shared"`` (as for state stores)."""

    async def head(self, user_id: str, session_id: str) -> LogHead: ...

    async def acquire(
        self, user_id: str, session_id: str, owner: str, lease_seconds: float
    ) -> LogWriter: ...

    async def renew(self, writer: LogWriter, lease_seconds: float) -> LogWriter:
        """The same epoch with a later ``lease_until``; ``LogFenced`` if the lease was lost."""
        ...

    async def release(self, writer: LogWriter) -> bool:
        """Give the lease up now; False (no change) when it was already lost."""
        ...

    async def seal(self, user_id: str, session_id: str, owner: str) -> None:
        """Fence ``owner`` on this session forever (its current lease ends too)."""
        ...

    async def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool: ...

    async def commit(
        self,
        writer: LogWriter,
        batch_id: str,
        expected_seq: int,
        events: Sequence[LogEvent],
        *,
        finish: bool = False,
    ) -> CommitResult:
        """Append ``events`` (the rules above). ``finish=True`` makes it the writer's last
        commit: in the same atomic step the lease ends and the owner is sealed, so a run's
        final save costs one round trip, not three."""
        ...

    async def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None = None
    ) -> list[LogEvent]:
        """Committed events with ``seq > seq`` in order, at most ``limit`` of them."""
        ...

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        """The user's sessions that have a log, in a stable order (``cursor=""``: first)."""
        ...

    async def delete(self, user_id: str, session_id: str) -> bool:
        """Remove the session's whole log (head, commits, seals); True if it existed."""
        ...

    async def aclose(self) -> None: ...
