"""The inbox's I/O: appends under a short-lived lease, cached folds, owner leases.

A session's commands live in the inbox log's session ``c/<session_id>``; its owner lease is
the writer lease of ``o/<session_id>`` (never committed to). An append acquires the
``c/`` session with a unique owner, brings the fold up to the head (nobody else can append
now), lets the caller decide what to write from that fold, commits at the head and
releases: check-then-append is atomic, which is what the idempotency rule needs.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import attrs
from hookagent.errors import InvalidIdentifier, LeaseHeld, LogFenced, StalePrefix
from hookagent.messages import new_id
from hookagent.sessionlog import LogEvent, LogWriter, SessionLog
from hookagent.store.ids import MAX_ID_LENGTH, check_id

from .errors import InboxBusy
from .fold import InboxState

log = logging.getLogger("hookagent.session")
APPEND_LEASE = 10.0
PAGE = 1000
CMD_PREFIX = "c/"
OWNER_PREFIX = "o/"


def inbox_session(session_id: str) -> str:
    return _prefixed(CMD_PREFIX, session_id)


def owner_session(session_id: str) -> str:
    return _prefixed(OWNER_PREFIX, session_id)


def _prefixed(prefix: str, session_id: str) -> str:
    check_id(session_id, "session_id")
    if len(session_id) + len(prefix) > MAX_ID_LENGTH:
        raise InvalidIdentifier(
            f"a session served by AgentSession has an id of at most "
            f"{MAX_ID_LENGTH - len(prefix)} characters (the inbox prefixes it), got {len(session_id)}"
        )
    return prefix + session_id


class Inbox:
    """The inbox log of one host (shared by every replica naming the same log)."""

    def __init__(self, log: SessionLog, *, append_timeout: float = 30.0) -> None:
        self.log = log
        self.append_timeout = append_timeout
        self._states: dict[tuple[str, str], InboxState] = {}
        self._locks: dict[tuple[str, str], anyio.Lock] = {}

    def _lock(self, key: tuple[str, str]) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    # ------------------------------------------------------------------ reading
    async def state(self, user_id: str, session_id: str) -> InboxState:
        """The fold brought up to the inbox's head (one head read when nothing moved)."""
        key = (user_id, session_id)
        async with self._lock(key):
            return await self._refresh(key)

    async def _refresh(self, key: tuple[str, str]) -> InboxState:
        user_id, session_id = key
        sid = inbox_session(session_id)
        head = await self.log.head(user_id, sid)
        state = self._states.get(key)
        if (
            state is None
            or state.seq > head.seq
            or (state.seq == head.seq and state.commit_id != head.commit_id)
        ):
            state = InboxState(user_id, session_id)  # new, or deleted and written again
        while state.seq < head.seq:
            page = await self.log.read_after(user_id, sid, state.seq, PAGE)
            if not page:
                break
            state.apply(page)
        state.commit_id = head.commit_id if state.seq == head.seq else state.commit_id
        self._states[key] = state
        return state

    def cached(self, user_id: str, session_id: str) -> InboxState | None:
        return self._states.get((user_id, session_id))

    async def head_seq(self, user_id: str, session_id: str) -> int:
        return (await self.log.head(user_id, inbox_session(session_id))).seq

    async def sessions(self, user_id: str) -> AsyncIterator[str]:
        """The user's sessions that have an inbox (every page)."""
        cursor: str | None = ""
        while cursor is not None:
            page = await self.log.list_session_ids(user_id, limit=500, cursor=cursor or None)
            for sid in page.session_ids:
                if sid.startswith(CMD_PREFIX):
                    yield sid[len(CMD_PREFIX) :]
            cursor = page.next_cursor

    # ------------------------------------------------------------------ appending
    async def append(
        self,
        user_id: str,
        session_id: str,
        decide: Callable[[InboxState], Sequence[LogEvent]],
    ) -> InboxState:
        """Append what ``decide`` returns for the fold at the head (it may raise: nothing
        is written; it may return nothing: nothing is written). Returns the fold after."""
        key = (user_id, session_id)
        sid = inbox_session(session_id)
        deadline = time.monotonic() + self.append_timeout
        delay = 0.005
        while True:
            try:
                writer = await self.log.acquire(user_id, sid, f"append-{new_id()}", APPEND_LEASE)
            except LeaseHeld:
                if time.monotonic() > deadline:
                    raise InboxBusy(
                        f"user_id={user_id!r} session_id={session_id!r}: the inbox stayed "
                        f"busy for {self.append_timeout:g}s"
                    ) from None
                await anyio.sleep(random.uniform(delay / 2, delay))
                delay = min(delay * 2, 0.25)
                continue
            try:
                async with self._lock(key):
                    state = await self._refresh(key)
                    if state.seq != writer.seq:
                        continue  # the head moved between acquire and read: take it again
                    events = list(decide(state))
                    if not events:
                        return state
                    result = await self.log.commit(writer, new_id(), writer.seq, events)
                    first = result.first_seq
                    state.apply(attrs.evolve(e, seq=first + i) for i, e in enumerate(events))
                    state.commit_id = result.head.commit_id
                    return state
            except (LogFenced, StalePrefix):
                self._states.pop(key, None)  # slow past the lease: read again, decide again
                continue
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await self.log.release(writer)
                    except Exception:  # the lease ends by itself within APPEND_LEASE
                        log.debug("inbox: releasing an append lease failed", exc_info=True)

    # ------------------------------------------------------------------ ownership
    async def own(
        self, user_id: str, session_id: str, replica_id: str, lease: float
    ) -> LogWriter | None:
        """The session's owner lease for ``replica_id``, or None while another holds it."""
        try:
            return await self.log.acquire(user_id, owner_session(session_id), replica_id, lease)
        except LeaseHeld:
            return None

    async def renew_owner(self, writer: LogWriter, lease: float) -> LogWriter | None:
        try:
            return await self.log.renew(writer, lease)
        except LogFenced:
            return None

    async def release_owner(self, writer: LogWriter) -> None:
        try:
            await self.log.release(writer)
        except Exception:  # it expires by itself within the owner lease
            log.warning("inbox: releasing the owner lease failed", exc_info=True)

    def forget(self, user_id: str, session_id: str) -> None:
        self._states.pop((user_id, session_id), None)
        self._locks.pop((user_id, session_id), None)
