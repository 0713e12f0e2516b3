"""A bounded per-store cache of decoded histories, so a load reads only what is new.

An entry is valid only for the history generation and committed length it was read at; the
head is always read first (another process may have written), and a generation is a random
id bumped on every rewrite, so a stale entry can never be mistaken for the current history.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Generic, NamedTuple, TypeVar

import attrs
from hookagent.messages import Msg

SlotKey = tuple[str, str, str]
V = TypeVar("V")


@attrs.frozen
class Cached:
    gen: str
    count: int
    size: int
    msgs: tuple[Msg, ...]
    version: int = 0
    """Local disk: the newest commit known (format-2 commits are not in the head file)."""
    state: bytes = b""
    log: list[Msg] | None = None
    """Local disk: the slot's messages are ``log[:count]`` (``msgs`` is then empty). The
    list is only ever appended to, and loaded histories share it (``History.shared``), so a
    warm load or an append copies nothing; a rewrite starts a new list."""


class Seen(NamedTuple):
    """What one store instance last read or wrote of a slot (its ``seen`` memory)."""

    version: int
    gen: str
    """The history generation (a random id a delete never brings back)."""
    end: int
    """Where that version's commit frame ends in the generation's record file (acknowledged:
    fsynced before it was returned), or 0 when the head itself commits it."""


class SlotLru(Generic[V]):
    """LRU of ``(user_id, session_id, key) -> V``, thread-safe.

    Every operation is O(1) in the number of entries (``drop`` of a whole session: O(its
    keys)), through an index of the keys held per ``(user_id, session_id)``: the lock is one
    that every load and save takes, so a delete must not scan a full memory under it. A
    session's only key (the usual case) is indexed as the key itself, not a set (a set costs
    about 200 bytes more per entry).
    """

    def __init__(self, slots: int) -> None:
        self._slots = max(0, slots)
        self._data: OrderedDict[SlotKey, V] = OrderedDict()
        self._by_session: dict[tuple[str, str], str | set[str]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: SlotKey) -> V | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is not None:
                self._data.move_to_end(key)
            return entry

    def put(self, key: SlotKey, entry: V) -> None:
        if not self._slots:
            return
        with self._lock:
            if key not in self._data:
                self._index(key)
            self._data[key] = entry
            self._data.move_to_end(key)
            while len(self._data) > self._slots:
                self._unindex(self._data.popitem(last=False)[0])

    def _index(self, key: SlotKey) -> None:
        session = key[:2]
        held = self._by_session.get(session)
        if held is None:
            self._by_session[session] = key[2]
        elif isinstance(held, set):
            held.add(key[2])
        elif held != key[2]:
            self._by_session[session] = {held, key[2]}

    def _unindex(self, key: SlotKey) -> None:
        session = key[:2]
        held = self._by_session.get(session)
        if isinstance(held, set):
            held.discard(key[2])
            if len(held) == 1:
                self._by_session[session] = held.pop()
        elif held == key[2]:
            del self._by_session[session]

    def drop(self, user_id: str, session_id: str, key: str | None = None) -> None:
        with self._lock:
            if key is not None:
                one = (user_id, session_id, key)
                if one in self._data:
                    del self._data[one]
                    self._unindex(one)
                return
            held = self._by_session.pop((user_id, session_id), None)
            for k in (held,) if isinstance(held, str) else held or ():
                del self._data[(user_id, session_id, k)]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._by_session.clear()


class HistoryCache(SlotLru[Cached]):
    """Decoded histories by slot."""

    def extended(self, hit: Cached, new: Sequence[Msg]) -> list[Msg]:
        """The log of ``hit``'s messages + ``new``: ``hit.log`` itself, appended to, when
        nothing was appended past ``hit.count`` (histories read it only up to their own
        length); else a new list. Checked and extended under the lock: two threads extending
        one log from the same entry must not both append."""
        with self._lock:
            log = hit.log
            if log is not None and len(log) == hit.count:
                log.extend(new)
                return log
        old = hit.msgs if hit.log is None else hit.log[: hit.count]
        return [*old, *new]
