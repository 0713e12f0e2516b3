"""Per-session gates: calls on one (user_id, session_id) run one at a time, in arrival order.

anyio's ``Lock`` hands itself to waiters first-in first-out, so one lock per active session
gives FIFO order; the entry is dropped when the last holder or waiter leaves, so idle
sessions cost nothing. A gate may yield a ``Fence`` (the distributed gates of store plugins
do); the local one yields None.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
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

    def acquire(
        self, user_id: str, session_id: str, *, timeout: float | None = None
    ) -> AbstractAsyncContextManager[Fence | None]:
        return _Hold(self._locks, user_id, session_id, timeout)


class _Hold:
    """``async with gate.acquire(...)``: the session's lock, held for the block.

    A class, not an ``asynccontextmanager`` generator (a call takes the gate once; the
    generator's frames and its ``athrow``/``anext`` steps cost more than the lock itself).
    """

    __slots__ = ("key", "lock", "locks", "timeout")

    def __init__(
        self,
        locks: dict[tuple[str, str], tuple[anyio.Lock, int]],
        user_id: str,
        session_id: str,
        timeout: float | None,
    ) -> None:
        self.locks, self.key, self.timeout = locks, (user_id, session_id), timeout
        self.lock: anyio.Lock | None = None

    async def __aenter__(self) -> Fence | None:
        key, locks = self.key, self.locks
        # fast_acquire: a free gate is taken without yielding to the event loop (no cancel
        # scope, no loop round per call); a held one still queues first-in first-out
        lock, users = locks.get(key) or (anyio.Lock(fast_acquire=True), 0)
        locks[key] = (lock, users + 1)
        try:
            timeout = self.timeout
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
                            f"session user_id={key[0]!r} session_id={key[1]!r} stayed "
                            f"busy for {timeout}s"
                        ) from None
        except BaseException:
            self._leave()
            raise
        self.lock = lock
        return None

    async def __aexit__(self, *exc: object) -> None:
        lock = self.lock
        assert lock is not None
        try:
            lock.release()
        finally:
            self._leave()

    def _leave(self) -> None:
        key, locks = self.key, self.locks
        lock, users = locks[key]
        if users <= 1:
            del locks[key]
        else:
            locks[key] = (lock, users - 1)
