"""Decoded messages per slot, so that a load reads and decodes only the new tail.

An entry is valid while the slot's ``generation`` (a random token the head changes on every
rewrite, truncation or re-creation) is the same: within one generation the history only
grows, so the cached messages are a prefix of what is stored. Another process may have
written in between: the head is always read first, then only ``seq >= len(cached)``.
"""

from __future__ import annotations

from collections import OrderedDict

from hookagent import Msg

Slot = tuple[str, str, str]  # encoded (user_id, session_id, key)


class MessageCache:
    """A bounded LRU of ``slot -> (generation, messages)``; ``max_slots=0`` disables it."""

    def __init__(self, max_slots: int) -> None:
        self.max_slots = max_slots
        self._entries: OrderedDict[Slot, tuple[str, tuple[Msg, ...]]] = OrderedDict()

    def get(self, slot: Slot, generation: str, count: int) -> tuple[Msg, ...]:
        entry = self._entries.get(slot)
        if entry is None or entry[0] != generation or len(entry[1]) > count:
            return ()
        self._entries.move_to_end(slot)
        return entry[1]

    def put(self, slot: Slot, generation: str, messages: tuple[Msg, ...]) -> None:
        if self.max_slots <= 0:
            return
        self._entries[slot] = (generation, messages)
        self._entries.move_to_end(slot)
        while len(self._entries) > self.max_slots:
            self._entries.popitem(last=False)

    def drop(self, user: str, session: str, key: str | None = None) -> None:
        for slot in [s for s in self._entries if s[:2] == (user, session)]:
            if key is None or slot[2] == key:
                del self._entries[slot]
