"""Per-slot memory of a store instance: decoded messages and the highest version seen.

Why: a warm load must not cost O(history). The head carries a generation (bumped on every
rewrite, from a counter that never goes back) and a hash chain over the encoded messages;
a cached prefix is reused only when the generation matches and the chain recomputed over
the cached chain plus the new tail equals the server's, so a prefix silently replaced (lost
writes after a failover, then new writes reusing the numbers) is never served.
"""

from __future__ import annotations

import binascii
import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

import attrs
from hookagent.messages import Msg

K = TypeVar("K")
V = TypeVar("V")

Slot = tuple[str, str, str]


def chain(start: str, items: Iterable[bytes]) -> str:
    """sha1 hex chain: c = sha1(c_prev_hex || item), as ``redis.sha1hex`` computes it in Lua."""
    # copying one empty hash object skips OpenSSL's per-object setup (~9% of a cold load's
    # 4,000-record chain)
    c, fresh, hexlify = (
        start.encode("ascii"),
        hashlib.sha1(usedforsecurity=False).copy,
        binascii.hexlify,
    )
    for item in items:
        h = fresh()
        h.update(c + item)
        c = hexlify(h.digest())
    return c.decode("ascii")


@attrs.frozen
class CachedHistory:
    """A slot's messages as of one head, and that head's write id and encoded sections: a
    load that finds the same head answers without sending the sections again.

    ``log`` is append-only: this head's messages are ``log[:length]``, and loaded histories
    share it (``History.shared``), so neither a warm load nor a save copies the history.
    """

    generation: int
    chain: str
    log: list[Msg]
    length: int
    write_id: str = ""
    sections: bytes = b""

    def extended(self, start: int, new: Sequence[Msg]) -> list[Msg]:
        """The log of ``log[:start] + new``: this log itself, appended to, when nothing was
        appended past ``start`` (histories read it only up to their own length); a new list
        otherwise (the only copy, and only after a rewrite)."""
        if start == self.length == len(self.log):
            self.log.extend(new)
            return self.log
        return [*self.log[:start], *new]


@attrs.frozen
class Seen:
    """What this instance last observed of a slot: the order (incarnation, version) and writer."""

    incarnation: int
    version: int
    write_id: str

    @property
    def order(self) -> tuple[int, int]:
        return (self.incarnation, self.version)


class Lru(Generic[K, V]):
    """A bounded mapping that forgets the least recently used entry."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        if self._size <= 0:
            return
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def pop(self, key: K) -> None:
        self._data.pop(key, None)

    def __len__(self) -> int:
        return len(self._data)
