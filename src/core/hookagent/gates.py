"""Per-session gates: calls on one (user_id, session_id) run one at a time, in arrival order.

anyio's ``Lock`` hands itself to waiters first-in first-out, so one lock per active session
gives FIFO order; the entry is dropped when the last holder or waiter leaves, so idle
sessions cost nothing. A gate may yield a ``Fence`` (the distributed gates of store plugins
do); the local one yields None.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol, runtime_checkable

import anyio
import anyio.lowlevel

from .errors import SessionBusy
from .store.base import Fence


@runtime_checkable
class SessionGate(Protocol):
    def acquire(
        self, user_id: str, session_id: str, *, timeout: float | None = None
    ) -> AbstractAsyncContextManager[Fence | None]: ...


class LocalSessionGate:
    """In-process FIFO gate, shared by every agent built from one configuration."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def acquire(
        self, user_id: str, session_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[Fence | None]:
        key = (user_id, session_id)
        # fast_acquire: a free gate is taken without yielding to the event loop (no cancel
        # scope, no loop round per call); a held one still queues first-in first-out
        lock, users = self._locks.get(key) or (anyio.Lock(fast_acquire=True), 0)
        self._locks[key] = (lock, users + 1)
        try:
            if timeout is None:
                await lock.acquire()
            else:
                await anyio.lowlevel.checkpoint_if_cancelled()  # as acquire() does
                try:
                    lock.acquire_nowait()  # a free gate needs no timeout scope
                except anyio.WouldBlock:
                    with anyio.move_on_after(timeout) as scope:
                        await lock.acquire()
                    if scope.cancelled_caught:
                        raise SessionBusy(
                            f"session user_id={user_id!r} session_id={session_id!r} stayed "
                            f"busy for {timeout}s"
                        ) from None
            try:
                yield None
            finally:
                lock.release()
        finally:
            lock_, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock_, users - 1)
