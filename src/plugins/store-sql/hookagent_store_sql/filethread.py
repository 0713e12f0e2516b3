"""The SQLite file's one thread: an ``Executor`` of one worker, with a hand-off that builds
no future (``post``) for the group commit, which reports by itself.

Why not ``ThreadPoolExecutor(max_workers=1)``, as before: its ``submit`` builds a
``concurrent.futures.Future`` (a ``Condition`` and its lock), a work item, and passes its
idle semaphore (pure Python) on both sides; for a save that waits on an asyncio future of
its own, that was about 45 K instructions per hand-off of the 110 K a hop cost. Kept from
it: one worker, started on first use; work queued before ``shutdown`` still runs; nothing
is accepted after ``shutdown`` or once the interpreter is exiting (``RuntimeError``, which
the store reports as ``StoreUnavailable``); at exit every worker finishes what it holds and
is joined, as ``concurrent.futures`` does (its own hook, ``threading._register_atexit``); a
collected executor's worker ends; a forked child starts a thread of its own.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from queue import SimpleQueue
from typing import Any, TypeVar
from weakref import WeakKeyDictionary, finalize

T = TypeVar("T")
Work = Callable[[], Any]

_log = logging.getLogger(__name__)
_QUEUES: WeakKeyDictionary[threading.Thread, SimpleQueue[Work | None]] = WeakKeyDictionary()
"""Every worker's queue, whether its ``FileThread`` is still referenced or not."""
_exiting = False
_LOCK = threading.Lock()
"""Taken by every post, shutdown and the exit hook: nothing is queued behind a sentinel."""


def _at_exit() -> None:
    """Before the interpreter joins its threads: refuse new work, let each worker drain
    what it was given, and join it (``concurrent.futures.thread._python_exit``'s rule)."""
    global _exiting
    with _LOCK:
        _exiting = True
        workers = list(_QUEUES.items())
        for _, queue in workers:
            queue.put(None)
    for thread, _ in workers:
        thread.join()


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # another thread may have held it at the fork: it is not here


os.register_at_fork(after_in_child=_after_fork_in_child)

_register = getattr(threading, "_register_atexit", None)
if _register is not None:  # (CPython 3.9+, what concurrent.futures uses)
    _register(_at_exit)


class FileThread(Executor):
    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: SimpleQueue[Work | None] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._shutdown = False

    def post(self, fn: Work) -> None:
        """Run ``fn()`` in the thread; no result is kept (``fn`` reports by itself).
        ``RuntimeError`` once shut down or while the interpreter exits."""
        with _LOCK:
            if self._shutdown or _exiting:
                raise RuntimeError("cannot schedule new work after shutdown")
            if self._thread is None or self._pid != os.getpid():
                self._start()
            self._queue.put(fn)

    def _start(self) -> None:
        pid = os.getpid()
        if self._pid != pid:  # a forked child: the parent's thread and queue are not here
            self._queue, self._pid = SimpleQueue(), pid
        queue = self._queue
        # without the exit hook the interpreter would wait for it forever: a daemon then
        thread = threading.Thread(
            target=self._work, args=(queue,), name=self._name, daemon=_register is None
        )
        thread.start()
        self._thread = thread
        _QUEUES[thread] = queue
        # an executor nobody holds any more ends its worker once the queue is drained
        finalize(self, queue.put, None).atexit = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """``Executor.submit``: a future, cancelled (and ``fn`` not run) if cancelled first."""
        future: Future[T] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

        self.post(run)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Accept nothing more; what was queued still runs (``cancel_futures`` is not
        supported: posted work has no future to cancel)."""
        with _LOCK:
            if not self._shutdown:
                self._shutdown = True
                self._queue.put(None)
        if wait:
            self.join()

    def join(self) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    @staticmethod
    def _work(queue: SimpleQueue[Work | None]) -> None:
        while True:
            fn = queue.get()
            if fn is None:
                return
            try:
                fn()
            except BaseException:  # posted work reports its own errors: this is a bug
                _log.critical("unhandled error in the SQLite file's thread", exc_info=True)
            del fn
