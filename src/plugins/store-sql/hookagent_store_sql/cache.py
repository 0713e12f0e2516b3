"""A bounded per-slot cache of decoded messages, so a load reads only the new tail.

An entry is valid for the slot's (generation, message count): the generation is bumped on
every write that drops or changes a stored message, and a recreated slot starts at a random
generation, so a reader holding generation g and n messages needs only rows ``seq >= n``.
An entry is only ever made from rows that were checked and decoded (``verify``) or from a
save's own rows; it keeps the head text too, which a save's compare-and-set compares with
the stored one, so a head changed behind the store's back is never overwritten unread.

The messages are one append-only list per slot (``log``; the slot's are ``log[:length]``)
that every loaded history shares (``History.shared``): a warm load or an append extends it
by what is new, never copies it; a rewrite starts a new list, so a history loaded before
still reads the list it shares, which nothing changes below its length.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import attrs
from hookagent.messages import Msg

SlotKey = tuple[str, str, str]


@attrs.frozen
class CachedSlot:
    version: int
    generation: int
    log: list[Msg]
    length: int
    head: str

    def extended(self, start: int, new: Sequence[Msg]) -> list[Msg]:
        """The log of ``log[:start] + new``: this log itself, appended to, when nothing was
        appended past ``start`` (histories read it only up to their own length); a new list
        otherwise (the only copy: after a rewrite, or when another load extended it first)."""
        if start == self.length == len(self.log):
            self.log.extend(new)
            return self.log
        return [*self.log[:start], *new]


class SlotCache:
    """Least-recently-used, at most ``max_slots`` entries (0 disables caching)."""

    def __init__(self, max_slots: int) -> None:
        if type(max_slots) is not int or max_slots < 0:
            raise ValueError(f"cache_slots must be an int >= 0, got {max_slots!r}")
        self._max = max_slots
        self._data: OrderedDict[SlotKey, CachedSlot] = OrderedDict()

    def get(self, key: SlotKey) -> CachedSlot | None:
        entry = self._data.get(key)
        if entry is not None:
            self._data.move_to_end(key)
        return entry

    def put(self, key: SlotKey, entry: CachedSlot) -> None:
        if self._max == 0:
            return
        self._data[key] = entry
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def drop(self, key: SlotKey) -> None:
        self._data.pop(key, None)

    def drop_session(self, user_id: str, session_id: str) -> None:
        for k in [k for k in self._data if k[0] == user_id and k[1] == session_id]:
            del self._data[k]

    def clear(self) -> None:
        self._data.clear()
