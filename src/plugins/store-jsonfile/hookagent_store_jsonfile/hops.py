"""Run a blocking operation on the event loop's thread, hopping to a worker only to wait.

Why: in W2 (many new sessions, 50 in flight) half of a save's CPU was the GIL handed back
and forth between the loop's thread and the worker running the save, which runs Python between
some 15-35 short syscalls and drops the GIL at each one (49-56 context switches a call;
``bench/notes/file-store.md``, "Session 13"). Run on the loop's thread, the same save's
``open``, ``write``, ``rename`` and ``mkdir`` are microseconds of page-cache work on a local
disk; only its ``fsync`` and a ``flock`` held by another process wait, and only those go to
a worker.

``run_inline`` runs the operation in a greenlet on the loop's thread. Where the operation
must wait, it calls ``disk_wait`` (an ``fsync``) or ``lock_wait`` (a contended ``flock``):
inside ``run_inline`` that switches back to the loop, which awaits the one call in a worker
and switches back in with its result or its exception; anywhere else (a worker thread, the
blocking core called directly) the call simply runs in place. So the blocking core stays
one code path, crash-tested as before: only where it waits moves.

The two kinds of wait use separate threads: an ``fsync`` never waits on a lock, so a save
suspended at its ``fsync`` while holding a slot's flock always gets a thread, however many
other operations are blocked in ``flock`` on that slot. The same bridge is SQLAlchemy's way
of running its blocking ORM core on asyncio (``greenlet_spawn``/``await_only``); greenlet is
the C extension it uses, maintained with gevent.

Code running inside ``run_inline`` must not hold a ``threading`` lock across a wait: another
greenlet on the same thread asking for it would block the loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet

T = TypeVar("T")
Waiter = Callable[..., Awaitable[Any]]
"""``waiter(kind, func, *args)``: ``func(*args)`` run in a worker of pool ``kind``
(``"disk"``, ``"lock"`` or ``"ops"``), awaited; never cancelled half-way."""


class _Inline(greenlet.greenlet):  # type: ignore[misc]  # (greenlet: no type information)
    """A greenlet run by ``run_inline``: its waits switch back to the loop."""


def _wait(kind: str, func: Callable[..., T], args: tuple[Any, ...]) -> T:
    current = greenlet.getcurrent()
    if type(current) is _Inline:
        parent = current.parent
        assert parent is not None
        result: T = parent.switch((kind, func, args))
        return result
    return func(*args)


def disk_wait(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)``, a call that waits on the disk and never on a lock (``fsync``)."""
    return _wait("disk", func, args)


def lock_wait(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)``, a call that may wait for another holder of a lock (``flock``)."""
    return _wait("lock", func, args)


def work_wait(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)``, a call too long for the loop's thread (a cold load's read and
    decode of a whole history) that never waits on a lock held elsewhere."""
    return _wait("ops", func, args)


def inline() -> bool:
    """True inside ``run_inline``."""
    return type(greenlet.getcurrent()) is _Inline


async def run_inline(waiter: Waiter, func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` on this thread; each ``disk_wait``/``lock_wait`` in it is awaited
    through ``waiter``. An exception a wait raises is raised at the wait, inside ``func``."""
    glet = _Inline(func)
    step = glet.switch(*args)
    while not glet.dead:
        kind, call, call_args = step
        try:
            value = await waiter(kind, call, *call_args)
        except BaseException as exc:  # (the wait's own error, raised where ``func`` waited)
            step = glet.throw(exc)
        else:
            step = glet.switch(value)
    result: T = step
    return result
