"""A bounded per-store cache of decoded histories, so a load reads only what is new.

An entry is valid only for the history generation and committed length it was read at; the
head is always read first (another process may have written), and a generation is a random
id bumped on every rewrite, so a stale entry can never be mistaken for the current history.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

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


class SlotLru(Generic[V]):
    """LRU of ``(user_id, session_id, key) -> V``, thread-safe."""

    def __init__(self, slots: int) -> None:
        self._slots = max(0, slots)
        self._data: OrderedDict[SlotKey, V] = OrderedDict()
        self._lock = threading.Lock()

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
            self._data[key] = entry
            self._data.move_to_end(key)
            while len(self._data) > self._slots:
                self._data.popitem(last=False)

    def drop(self, user_id: str, session_id: str, key: str | None = None) -> None:
        with self._lock:
            for k in [k for k in self._data if k[:2] == (user_id, session_id)]:
                if key is None or k[2] == key:
                    del self._data[k]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class HistoryCache(SlotLru[Cached]):
    """Decoded histories by slot."""
