"""The fsyncs of inline saves (``hops``), run by workers that drain one queue per event loop.

Why: a thread hop is dear. Handing one call to a sleeping pool thread and being woken with its
result took 100-190 µs of CPU on the machine of session 15's sitting (a VM: every futex wake
of another vCPU is an exit to the host), as long as the fsync itself. A save waited for one
hop per fsync (five on a session's first save). Here a worker, once started, takes the next
fsync from the queue itself before it sleeps, so while saves keep coming (W2: 50 in flight)
the workers stay awake and a fsync costs the loop one append and one ``call_soon_threadsafe``
back. A new worker starts only when the queue holds more than the running workers are about
to take (a backlog), up to ``IO_THREADS``: fsyncs of different files still overlap.

Each call's result or exception is set on its own future; a call never waits on a lock
(fsyncs only: a flock held elsewhere waits in the ``"ops"`` pool instead, see ``hops``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def _settle(fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if fut.cancelled():
        return  # (never: the waiter shields it; a closing loop may cancel it)
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


class DiskQueue:
    """One event loop's queue of blocking calls, drained by up to ``limit`` pool workers."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, pool: Callable[[], ThreadPoolExecutor], limit: int
    ) -> None:
        self._loop = weakref.ref(loop)  # (a strong one would keep the loop, our own key, alive)
        self._pool = pool
        self._limit = limit
        self._items: deque[tuple[Callable[[], Any], asyncio.Future[Any]]] = deque()
        self._workers = 0
        self._lock = threading.Lock()
        self.pid = os.getpid()

    def submit(self, call: Callable[[], Any]) -> asyncio.Future[Any]:
        """Queue ``call`` (run in a worker); its future is settled on this loop."""
        loop = self._loop()
        assert loop is not None  # (called on the loop, which is alive)
        fut = loop.create_future()
        with self._lock:
            self._items.append((call, fut))
            start = self._workers < self._limit and len(self._items) > self._workers
            if start:
                self._workers += 1
        if start:
            try:
                self._pool().submit(self._drain)
            except RuntimeError:  # interpreter shutdown began: no new threads, drain here
                self._drain()
        return fut

    def _drain(self) -> None:
        """In a worker: run queued calls until none is left."""
        while True:
            with self._lock:
                if not self._items:
                    self._workers -= 1
                    return
                call, fut = self._items.popleft()
            try:
                ok, value = True, call()
            except BaseException as exc:  # (delivered to the waiter, raised where it waited)
                ok, value = False, exc
            self._deliver(fut, ok, value)
            del call, fut, value  # (nothing of a finished call is kept while the worker idles)

    def _deliver(self, fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
        loop = self._loop()  # (held only here: a finished loop is not kept by its worker)
        try:
            if loop is not None:
                loop.call_soon_threadsafe(_settle, fut, ok, value)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


_QUEUES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DiskQueue] = (
    weakref.WeakKeyDictionary()
)
_QUEUES_LOCK = threading.Lock()


def _fresh_lock() -> None:
    global _QUEUES_LOCK
    _QUEUES_LOCK = threading.Lock()  # a child may inherit it held by a thread it does not have


os.register_at_fork(after_in_child=_fresh_lock)


def queue_of(
    loop: asyncio.AbstractEventLoop, pool: Callable[[], ThreadPoolExecutor], limit: int
) -> DiskQueue:
    """The queue of ``loop`` (made on its first fsync; a forked child, which inherits none of
    the parent's workers, makes its own)."""
    queue = _QUEUES.get(loop)
    if queue is None or queue.pid != os.getpid():
        with _QUEUES_LOCK:  # (loops on other threads: sync twins' portals)
            queue = _QUEUES.get(loop)
            if queue is None or queue.pid != os.getpid():
                queue = _QUEUES[loop] = DiskQueue(loop, pool, limit)
    return queue
