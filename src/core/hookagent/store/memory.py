"""The in-memory store: tests and single-process demos. Everything is lost on exit.

It keeps the sections as encoded JSON (so a caller cannot mutate what is stored) and the
history as an append-only log of frozen ``Msg`` values. A save appends only the new messages
to the log; a load shares it (``History.shared``: the loaded history reads the log up to the
loaded length and copies on write), so neither copies nor re-encodes the history and a call
costs the same at message 4 and at message 40,000. A log is never changed below its end: a
save that rewrites the history starts a new one.
"""

from __future__ import annotations

import threading

import attrs
import orjson

from ..codec import decode_head, encode_head, encode_msg
from ..errors import CorruptState, Fenced, InvalidState, VersionConflict
from ..messages import Msg
from ..state import AgentState, History
from .base import AGENT_STATE_KEY, UNCONDITIONAL, ExpectedVersion, Fence, SessionPage, Versioned
from .ids import (
    check_cursor,
    check_expected_version,
    check_fence,
    check_id,
    check_loaded_slot,
    check_page_limit,
    check_schema_writable,
    check_slot,
    check_state_slot,
    slot_name,
)

_NO_KEYS: dict[str, _Entry] = {}
"""An absent session's keys (read only)."""


@attrs.define
class _Entry:
    version: int
    head: bytes
    log: list[Msg]
    """Append-only: histories loaded from earlier versions share it up to their length."""
    length: int
    """This version's history is ``log[:length]``."""
    checked: bool = False
    """True when this store encoded the entry itself (so it loads); else checked on save."""

    @property
    def messages(self) -> History:
        return History.shared(self.log, self.length)


class InMemoryAgentStateStore:
    """A versioned, fenced, thread-safe store held in this process."""

    locality = "process"  # kernel.store_locality: nobody outside this process sees it

    def __init__(self) -> None:
        # user_id -> session_id -> key -> entry ; user_id is the first level of every lookup
        self._data: dict[str, dict[str, dict[str, _Entry]]] = {}
        # (user_id, session_id) -> the newest (epoch, owner) a save was fenced with
        self._epochs: dict[tuple[str, str], tuple[int, str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "InMemoryAgentStateStore()"

    def another_handle(self) -> InMemoryAgentStateStore:
        """A second handle on the same data (what another process is to a shared backend):
        tests use it to check that what one handle writes, the other reads."""
        other = InMemoryAgentStateStore()
        other._data, other._epochs, other._lock = self._data, self._epochs, self._lock
        return other

    def _entry(self, user_id: str, session_id: str, key: str) -> _Entry | None:
        return self._data.get(user_id, {}).get(session_id, {}).get(key)

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        with self._lock:
            sessions = self._data.get(user_id)  # _entry(), inlined: a load and a save a call
            entry = None if sessions is None else sessions.get(session_id, _NO_KEYS).get(key)
        if entry is None:
            return Versioned(None, 0)
        try:
            state = decode_head(entry.head, ())
        except InvalidState as exc:  # the same type, naming the slot
            raise type(exc)(f"{slot_name(user_id, session_id, key)}: {exc}") from exc
        state.context = entry.messages  # shares the log: no copy (copy-on-write)
        return Versioned(check_loaded_slot(state, user_id, session_id, key), entry.version)

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
        check_slot(user_id, session_id, key)
        check_expected_version(expected_version)
        check_fence(fence)
        check_state_slot(state, user_id, session_id, key)
        head = encode_head(state)
        history = state.context
        with self._lock:
            if fence is not None:
                self._check_fence(user_id, session_id, fence)
            sessions = self._data.get(user_id)
            entry = None if sessions is None else sessions.get(session_id, _NO_KEYS).get(key)
            if entry is not None and not entry.checked:
                _check_stored(entry, user_id, session_id, key)
            current = 0 if entry is None else entry.version
            if expected_version is not UNCONDITIONAL and expected_version != current:
                raise VersionConflict(user_id, session_id, key, expected_version, current)
            base = history.unchanged_prefix
            if entry is not None and expected_version == current and 0 < base <= entry.length:
                new = history[base:]  # what the call added: O(new), never the whole history
                for m in new:
                    encode_msg(m)  # validates (type, size, depth) before anything is stored
                log = entry.log
                if base == entry.length == len(log):
                    log.extend(new)  # loaded histories read the log only up to their length
                else:  # the history was changed inside what is stored: a new log
                    log = log[:base] + new
            else:
                log = list(history)
                for m in log:
                    encode_msg(m)
            version = current + 1
            if sessions is None:
                sessions = self._data[user_id] = {}
            slot = sessions.get(session_id)
            if slot is None:
                slot = sessions[session_id] = {}
            slot[key] = _Entry(version, head, log, len(log), checked=True)
            if fence is not None:  # recorded only with the write it allowed
                self._epochs[(user_id, session_id)] = (fence.epoch, fence.owner)
        history.mark_committed()
        return version

    def _check_fence(self, user_id: str, session_id: str, fence: Fence | None) -> None:
        """The one fence rule: older than the newest epoch recorded for the session, or the
        same epoch held by another owner, is ``Fenced``; a save without a fence is not
        checked."""
        recorded = self._epochs.get((user_id, session_id))
        if fence is None or recorded is None:
            return
        epoch, owner = recorded
        if fence.epoch < epoch or (fence.epoch == epoch and fence.owner != owner):
            raise Fenced(
                f"lease epoch {fence.epoch} of {fence.owner!r} is stale: epoch {epoch} of "
                f"{owner!r} holds {slot_name(user_id, session_id)}"
            )

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        with self._lock:
            sessions = self._data.get(user_id)
            if sessions is None or session_id not in sessions:
                return False
            if key is None:
                del sessions[session_id]
                return True
            existed = sessions[session_id].pop(key, None) is not None
            if not sessions[session_id]:
                del sessions[session_id]
            return existed

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)
        with self._lock:
            return self._entry(user_id, session_id, key) is not None

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)
        with self._lock:
            ids = sorted(self._data.get(user_id, {}))
        if cursor is not None:
            ids = [s for s in ids if s > cursor]
        page = ids[:limit]
        more = len(ids) > limit
        return SessionPage(tuple(page), page[-1] if more else None)

    async def aclose(self) -> None:
        return None


def _check_stored(entry: _Entry, user_id: str, session_id: str, key: str) -> None:
    """Fail closed before overwriting an entry this store did not write itself (bytes
    planted by a test, say): a newer schema is ``UnsupportedSchemaVersion``, anything that
    does not load is ``CorruptState``; nothing is written, the evidence stays."""
    where = slot_name(user_id, session_id, key)
    try:
        doc = orjson.loads(entry.head)
    except orjson.JSONDecodeError as exc:
        raise CorruptState(f"{where}: the stored head is not valid JSON ({exc})") from None
    check_schema_writable(
        doc.get("schema_version") if type(doc) is dict else None, user_id, session_id, key
    )
    try:
        state = decode_head(entry.head, ())
        check_loaded_slot(state, user_id, session_id, key)
    except InvalidState as exc:
        if isinstance(exc, CorruptState):
            raise
        raise CorruptState(f"{where}: the stored state does not load: {exc}") from exc
    entry.checked = True
