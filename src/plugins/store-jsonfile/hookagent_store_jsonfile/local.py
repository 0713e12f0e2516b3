"""``LocalJsonFileStore``: the async face of the local-disk store (see ``localcore``).

Arguments are checked here, before any thread hop; the blocking work runs in a worker thread
(``anyio.to_thread``), never cancelled half-way (a cancelled caller's save still finishes or
fails as a whole). On asyncio the threads are a process-wide pool of ``IO_THREADS``
(``loop.run_in_executor`` awaited in a shielded scope, so a cancelled caller still waits for
the thread): the work is mostly Python under the GIL between short syscalls, and more threads
only hand the GIL back and forth. Measured at 50 in flight: 63 context switches per save and
load with anyio's 40 threads, 24 with a limit of 4, under 1 with the pool; 10-20% less CPU per
agent call with the pool than with anyio's threads. Other backends use ``anyio.to_thread``
limited to ``IO_THREADS``.

On a local filesystem (``mounts.is_local``), once the root is open, saves and loads run on
the loop's thread instead (``hops``): their Python and page-cache syscalls in place, only their
fsyncs (a second pool, ``"disk"``, fed by ``diskqueue``), a flock held elsewhere and a cold
load's read and decode (the ``"ops"`` pool) waited on in a worker. In W2 that cut voluntary
context switches per call from 67-69 to 29-30 and system CPU by a quarter
(``bench/notes/file-store.md``, "Session 14"); the queue and fewer hops per first save took
W2 from 766 to 1,048 calls/s ("Session 15").
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from hookagent.errors import HookagentError, StoreConfigurationError
from hookagent.state import AgentState
from hookagent.store.base import (
    AGENT_STATE_KEY,
    ExpectedVersion,
    Fence,
    SessionPage,
    Versioned,
)
from hookagent.store.ids import (
    check_cursor,
    check_expected_version,
    check_fence,
    check_id,
    check_page_limit,
    check_slot,
    check_state_slot,
)

from . import hops
from .diskqueue import queue_of
from .localcore import SEEN_SLOTS, LocalCore

T = TypeVar("T")

IO_THREADS = 4
"""Worker threads for local-disk work (several fsyncs can still overlap)."""
_LIMITERS: RunVar[dict[str, anyio.CapacityLimiter]] = RunVar("hookagent_store_jsonfile_io")
_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}


_POOL_LOCK = threading.Lock()


def _fresh_lock() -> None:
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()  # a child may inherit it held by a thread it does not have


os.register_at_fork(after_in_child=_fresh_lock)


def _pool(kind: str = "ops") -> ThreadPoolExecutor:
    """The process's pool for ``kind`` (a fresh one after a fork: a child inherits no
    threads). ``"ops"`` runs whole operations and contended flocks; ``"disk"`` only the
    fsyncs of inline saves, which never wait on a lock (``hops``)."""
    pool = _POOLS.get(kind)
    if pool is None or pool[0] != os.getpid():
        with _POOL_LOCK:  # two threads' first calls make one pool, not two
            pool = _POOLS.get(kind)
            if pool is None or pool[0] != os.getpid():
                name = "hookagent-jsonfile" if kind == "ops" else f"hookagent-jsonfile-{kind}"
                pool = _POOLS[kind] = (os.getpid(), ThreadPoolExecutor(IO_THREADS, name))
    return pool[1]


def _disk_pool() -> ThreadPoolExecutor:
    return _pool("disk")


def _nothing() -> None:
    return None


def _limiter(kind: str) -> anyio.CapacityLimiter:
    try:
        limiters = _LIMITERS.get()
    except LookupError:
        limiters = {}
        _LIMITERS.set(limiters)
    limiter = limiters.get(kind)
    if limiter is None:
        limiter = limiters[kind] = anyio.CapacityLimiter(IO_THREADS)
    return limiter


async def _wait(work: Future[Any], loop: asyncio.AbstractEventLoop) -> Any:
    """The thread's result. A native asyncio cancellation (``task.cancel()``, ``wait_for``)
    of a call already running is held back until the thread is done, then re-raised (anyio's
    are shielded); one that comes before the thread started it cancels it whole."""
    cancelled: asyncio.CancelledError | None = None
    with anyio.CancelScope(shield=True):
        while True:
            try:
                result = await asyncio.wrap_future(work, loop=loop)
            except asyncio.CancelledError as exc:
                if work.cancelled():
                    raise  # never started: nothing was done
                cancelled = cancelled or exc
                continue  # still running (or just done): wait for it again
            except BaseException:
                if cancelled is None:
                    raise
            break
    if cancelled is not None:
        raise cancelled
    return result


async def run_blocking(func: Any, *args: Any) -> Any:
    """Run ``func(*args)`` in a worker thread; a cancelled caller waits for it to finish."""
    call = functools.partial(func, *args)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio)
        pass
    else:
        try:
            work = _pool().submit(call)
        except RuntimeError:  # interpreter shutdown began (atexit): no new threads, run here
            return call()
        return await _wait(work, loop)
    return await anyio.to_thread.run_sync(call, limiter=_limiter("ops"))


async def _held_wait(held: list[BaseException], kind: str, func: Any, *args: Any) -> Any:
    """One wait of an inline operation (``hops``), in a worker of pool ``kind``: never
    cancelled (the operation is half-way), a native cancellation kept in ``held``."""
    call = functools.partial(func, *args)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio)
        with anyio.CancelScope(shield=True):
            return await anyio.to_thread.run_sync(call, limiter=_limiter(kind))
    if kind == "disk":  # fsyncs: workers that drain a queue (a thread hop is dear)
        done = queue_of(loop, _disk_pool, IO_THREADS).submit(call)
    else:
        try:
            work = _pool(kind).submit(call)
        except RuntimeError:  # interpreter shutdown began: no new threads, wait here
            return call()
        done = asyncio.wrap_future(work, loop=loop)
    with anyio.CancelScope(shield=True):
        while True:
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError as exc:
                if done.cancelled():
                    raise
                held.append(exc)  # re-raised once the operation is done


async def run_inline(func: Any, *args: Any) -> Any:
    """Run ``func(*args)`` on the loop's thread, its fsyncs and contended flocks in workers
    (``hops``); like ``run_blocking``, a cancelled caller waits for it to finish."""
    held: list[BaseException] = []
    try:
        result = await hops.run_inline(functools.partial(_held_wait, held), func, *args)
    finally:
        if held:
            raise held[0]
    return result


DEFAULT_SWEEP_AFTER = 600.0
"""Temp files older than this (seconds) are leftovers of a killed writer, never in flight."""


check_expected = check_expected_version


def check_page(limit: object, cursor: object) -> None:
    check_page_limit(limit)
    check_cursor(cursor)


def check_writers(writers: object) -> str:
    if not isinstance(writers, str) or writers not in ("single", "multi"):
        raise StoreConfigurationError(f"writers must be 'single' or 'multi', got {writers!r}")
    return writers


def check_slots(value: object, name: str = "cache_slots") -> int:
    if type(value) is not int or value < 0:
        raise StoreConfigurationError(f"{name} must be an int >= 0, got {value!r}")
    return value


def check_cache_slots(cache_slots: object) -> int:
    return check_slots(cache_slots, "cache_slots")


def check_sweep_after(sweep_after: object) -> float | None:
    """A number of seconds >= 0; None or infinity means never. Checked when the store is made:
    a string (say from a config file) would otherwise fail inside a save, under the slot's
    lock."""
    if sweep_after is None or sweep_after == math.inf:
        return None  # (inf meant "never" before the check existed: still accepted)
    if (
        isinstance(sweep_after, bool)
        or not isinstance(sweep_after, int | float)
        or not math.isfinite(sweep_after)
        or sweep_after < 0
    ):
        raise StoreConfigurationError(
            "sweep_after must be a number of seconds >= 0, or None or inf (never), "
            f"got {sweep_after!r}"
        )
    return float(sweep_after)


def check_root(root: object) -> Path:
    """The store root as an absolute path (fixed now, not at first use: the cwd may change)."""
    try:
        path = os.fspath(root)  # type: ignore[call-overload]
    except TypeError:
        path = None
    if not isinstance(path, str) or not path:
        raise StoreConfigurationError(f"the store root must be a non-empty path, got {root!r}")
    if "\x00" in path:
        raise StoreConfigurationError(f"the store root {path!r} contains a NUL character")
    return Path(path).absolute()


class LocalJsonFileStore:
    """Versioned slots in files under ``root``; safe for many processes on one local disk.

    :param root: the store directory (created 0700 on first use, not before, with any
        missing parents; a relative path is made absolute when the store is made).
    :param sweep_after: seconds after which a leftover temp file (or a record file no head
        names) is removed: in a slot's directories the first time this instance saves that
        slot, and everywhere by ``sweep()``. None (or ``math.inf``) disables the automatic
        per-slot sweep.
    :param cache_slots: how many slots' decoded histories to keep (0 disables the cache).
    :param seen_slots: how many slots' last seen (version, generation, commit end) to
        remember, to refuse a save onto a slot deleted and re-created since, and to fail
        closed on a commit seen that is now missing (about 0.6 KiB each with uuid ids; 0
        turns both checks off).
    :param writers: ``"multi"`` (default: any number of processes on this machine, locked by
        flock) or ``"single"`` (you promise one writer process). On a network filesystem,
        where flock is unreliable, ``"multi"`` is refused with ``StoreConfigurationError``.
    """

    locality = "host"  # kernel.store_locality: every process on this machine, no other host

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        sweep_after: float | None = DEFAULT_SWEEP_AFTER,
        cache_slots: int = 256,
        writers: str = "multi",
        seen_slots: int = SEEN_SLOTS,
    ) -> None:
        self.root = check_root(root)
        self.writers = check_writers(writers)
        self._core = LocalCore(
            self.root,
            sweep_after=check_sweep_after(sweep_after),
            cache_slots=check_cache_slots(cache_slots),
            writers=writers,
            seen_slots=check_slots(seen_slots, "seen_slots"),
        )

    def __repr__(self) -> str:
        return f"LocalJsonFileStore({str(self.root)!r})"

    async def open(self) -> LocalJsonFileStore:
        """Do now what the first operation would: open the root (made 0700, with its parents,
        if missing) and start a worker of each pool that loads and saves wait on, so that a
        process's first call pays for neither (two thread starts and the root's open: 0.3-0.5
        ms on session 15's machine when quiet, 2-4 ms beside another job). The kernel awaits it
        when it first needs the store (``plugin.Opening``). An error is left for the first
        operation to report (the disk may be mounted later). Returns self."""
        try:
            await run_blocking(self._core.call, self._core.root)  # (an "ops" worker)
        except HookagentError:
            return self
        if self._core.local_disk:
            await _held_wait([], "disk", _nothing)  # the way an inline save's fsync waits
        return self

    async def _run(self, func: Any, *args: Any) -> Any:
        return await run_blocking(self._core.call, func, *args)

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        core = self._core
        # inline on local disk: a cold read and decode waits in a worker (``LocalCore._read``)
        run = run_inline if core.local_disk else run_blocking
        result: Versioned = await run(core.call, core.get, user_id, session_id, key)
        return result

    async def save_if_version(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected_version: ExpectedVersion,
        *,
        key: str = AGENT_STATE_KEY,
        fence: Fence | None = None,
    ) -> int:
        check_slot(user_id, session_id, key)
        check_state_slot(state, user_id, session_id, key)
        check_expected(expected_version)
        check_fence(fence)
        core = self._core
        run = run_inline if core.local_disk else run_blocking  # (the first save opens the root)
        version: int = await run(
            core.call, core.save, user_id, session_id, state, expected_version, key, fence
        )
        return version

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        existed: bool = await self._run(self._core.delete, user_id, session_id, key)
        return existed

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)
        found: bool = await self._run(self._core.exists, user_id, session_id, key)
        return found

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        """Sorted session ids from the directory tree (no payload read), ``limit`` per page;
        O(page) while the user directory is unchanged (``listing``)."""
        check_id(user_id, "user_id", allow_empty=True)
        check_page(limit, cursor)
        page: SessionPage = await self._run(self._list_page, user_id, limit, cursor)
        return page

    def _list_page(self, user_id: str, limit: int, cursor: str | None) -> SessionPage:
        return self._core.list_page(user_id, limit, cursor)

    async def sweep(self, older_than: float = DEFAULT_SWEEP_AFTER) -> int:
        """Remove temp files and superseded record files older than ``older_than`` seconds."""
        removed: int = await self._run(self._core.sweep, older_than)
        return removed

    async def aclose(self) -> None:
        """Release the root directory and the cache; a later call opens them again."""
        self._core.close()
