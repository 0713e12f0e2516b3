"""SQLite's single-writer rule, kept by us rather than discovered as 'database is locked'.

One asyncio lock per database file (per event loop) serialises this process's writers; other
processes are serialised by ``BEGIN IMMEDIATE`` plus the busy timeout; what still comes back
busy is retried with jittered exponential backoff until a deadline.
"""

from __future__ import annotations

import asyncio
import os
import random
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def database_key(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def writer_lock(path_key: str) -> asyncio.Lock:
    """The lock shared by every store of this process writing to the file (on this loop)."""
    loop = asyncio.get_running_loop()
    per_loop = _LOCKS.setdefault(loop, {})
    lock = per_loop.get(path_key)
    if lock is None:
        lock = per_loop[path_key] = asyncio.Lock()
    return lock


@asynccontextmanager
async def maybe_lock(path_key: str | None) -> AsyncIterator[None]:
    if path_key is None:
        yield
        return
    async with writer_lock(path_key):
        yield


class Backoff:
    """Jittered exponential delays (5 ms doubling to 200 ms) until ``deadline`` seconds."""

    def __init__(self, deadline: float, first: float = 0.005, cap: float = 0.2) -> None:
        loop = asyncio.get_running_loop()
        self._end = loop.time() + deadline
        self._delay, self._cap = first, cap
        self.attempts = 0

    async def wait(self) -> bool:
        """Sleep before the next attempt; False when the deadline has passed."""
        self.attempts += 1
        now = asyncio.get_running_loop().time()
        if now >= self._end:
            return False
        delay = min(self._delay * random.uniform(0.5, 1.5), self._end - now)
        self._delay = min(self._delay * 2, self._cap)
        await asyncio.sleep(delay)
        return True
