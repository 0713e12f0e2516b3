"""The in-memory store: tests and single-process demos. Everything is lost on exit.

It keeps the sections as encoded JSON (so a caller cannot mutate what is stored) and the
history as a tuple of frozen ``Msg`` values, appending only the new messages on save, so a
call costs the same at message 4 and at message 4,000.
"""

from __future__ import annotations

import threading

import attrs

from ..codec import decode_head, encode_head, encode_msg
from ..errors import Fenced, VersionConflict
from ..messages import Msg
from ..state import AgentState
from .base import AGENT_STATE_KEY, UNCONDITIONAL, ExpectedVersion, Fence, SessionPage, Versioned
from .ids import (
    check_cursor,
    check_expected_version,
    check_fence,
    check_id,
    check_page_limit,
    check_slot,
)


@attrs.define
class _Entry:
    version: int
    head: bytes
    messages: tuple[Msg, ...]


class InMemoryAgentStateStore:
    """A versioned, fenced, thread-safe store held in this process."""

    def __init__(self) -> None:
        # user_id -> session_id -> key -> entry ; user_id is the first level of every lookup
        self._data: dict[str, dict[str, dict[str, _Entry]]] = {}
        self._epochs: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "InMemoryAgentStateStore()"

    def _entry(self, user_id: str, session_id: str, key: str) -> _Entry | None:
        return self._data.get(user_id, {}).get(session_id, {}).get(key)

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        with self._lock:
            entry = self._entry(user_id, session_id, key)
        if entry is None:
            return Versioned(None, 0)
        return Versioned(decode_head(entry.head, entry.messages), entry.version)

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
        head = encode_head(state)
        history = state.context
        with self._lock:
            self._check_fence(user_id, session_id, fence)
            entry = self._entry(user_id, session_id, key)
            current = 0 if entry is None else entry.version
            if expected_version is not UNCONDITIONAL and expected_version != current:
                raise VersionConflict(user_id, session_id, key, expected_version, current)
            base = history.unchanged_prefix
            if (
                entry is not None
                and expected_version == current
                and 0 < base <= len(entry.messages)
            ):
                new = history[base:]
                for m in new:
                    encode_msg(m)  # validates (type, size, depth) before anything is stored
                messages = entry.messages[:base] + tuple(new)
            else:
                for m in history:
                    encode_msg(m)
                messages = tuple(history)
            version = current + 1
            slot = self._data.setdefault(user_id, {}).setdefault(session_id, {})
            slot[key] = _Entry(version, head, messages)
        history.mark_committed()
        return version

    def _check_fence(self, user_id: str, session_id: str, fence: Fence | None) -> None:
        if fence is None:
            return
        newest = self._epochs.get((user_id, session_id), 0)
        if fence.epoch < newest:
            raise Fenced(
                f"lease epoch {fence.epoch} of {fence.owner!r} is older than {newest} "
                f"on user_id={user_id!r} session_id={session_id!r}"
            )
        self._epochs[(user_id, session_id)] = fence.epoch

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
