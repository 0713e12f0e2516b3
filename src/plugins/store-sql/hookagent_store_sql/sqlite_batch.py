"""Group commit for SQLite's direct saves: the saves waiting for the file's thread are
written in one transaction, so they share one ``COMMIT`` (one WAL fsync under
``synchronous=FULL``) and one hop into the thread.

Why: SQLite has one writer per file, so the commits of concurrent sessions (W2: 50 in flight)
queue behind each other's fsync; the thread, not the CPU, was the limit. Nothing about a
single save changes: each one still runs its own compare-and-set ``UPDATE`` (rowcount
checked) or create inside a ``SAVEPOINT``; one that does not apply (or fails) is rolled back
to its savepoint alone and reported as before; the others commit. Every save is acknowledged
only after the ``COMMIT`` that holds it returned. A failed ``COMMIT`` makes every save that
was in it "outcome unknown" (``StoreUnavailable``), a failed ``BEGIN IMMEDIATE`` (busy) fails
them all before anything was written, and the store retries those through its transaction
path. Saves that arrive while a batch runs form the next one; a save alone pays nothing more
than before.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from hookagent.errors import StoreUnavailable
from sqlalchemy.engine import Engine

from .runner import ThreadRunner

Work = Callable[[sqlite3.Connection], bool]
"""One save's statements: True if it applied, False if its compare-and-set matched nothing."""

_SAVEPOINT = "hookagent_save"


class HeldConnection:
    """The pooled connection the file's thread keeps checked out between direct operations.

    Why: a check-out and check-in of SQLAlchemy's pool (events, the reset's ``rollback``,
    the queue) cost about as much client CPU per operation as a warm load's statement. Used
    only in the file's thread. What the pool's check-in did is done here: a connection left
    in a transaction is rolled back after each operation, and one that cannot be is dropped.
    A disposed engine (a new pool) or another engine, or a forked child, gets a new one.
    """

    def __init__(self) -> None:
        self._fairy: Any = None
        self._owner: tuple[Any, Any, int] | None = None

    def get(self, engine: Engine) -> sqlite3.Connection:
        owner = (engine, getattr(engine, "pool", None), os.getpid())
        fairy, held = self._fairy, self._owner
        if (
            fairy is None
            or held is None
            or held[0] is not engine
            or held[1] is not owner[1]
            or held[2] != owner[2]  # a pid: compared by value
        ):
            mine = held is not None and held[2] == owner[2]
            self._fairy = self._owner = None
            if fairy is not None and mine:  # disposed or replaced: close it, as dispose does
                _drop(fairy)  # (a forked child leaves its parent's connection alone)
            fairy = engine.raw_connection()
            self._fairy, self._owner = fairy, owner
        conn = fairy.driver_connection
        assert conn is not None
        return conn  # type: ignore[no-any-return]

    def done(self) -> None:
        """After an operation: no transaction is left open on the held connection."""
        fairy = self._fairy
        if fairy is None:
            return
        conn = fairy.driver_connection
        try:
            if conn is None or conn.in_transaction:
                conn.rollback()
        except Exception:  # cannot be reset: never reuse it
            self._fairy = self._owner = None
            _drop(fairy)

    def release(self) -> None:
        """Give the connection back to its pool (the store is closing)."""
        fairy, self._fairy, self._owner = self._fairy, None, None
        if fairy is not None:
            fairy.close()


def _drop(fairy: Any) -> None:
    try:
        fairy.invalidate()  # closes the driver's connection
    except Exception:  # noqa: S110 - it is not used again either way
        pass


class GroupCommit:
    def __init__(self, runner: ThreadRunner, engine: Engine, wrap: Callable[..., Any]) -> None:
        self._runner, self._engine, self._wrap = runner, engine, wrap
        self.held = HeldConnection()
        self._lock = threading.Lock()
        self._pending: list[tuple[Work, asyncio.Future[bool], asyncio.AbstractEventLoop]] = []
        self._scheduled = False

    async def write(self, work: Work) -> bool:
        """Run ``work`` in the next batch; its outcome (or its error) once that committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        with self._lock:
            self._pending.append((work, future, loop))
            start, self._scheduled = not self._scheduled, True
        if start:
            try:
                self._runner.submit(self._flush)
            except BaseException as exc:  # e.g. the executor is shut down: nothing will run
                with self._lock:
                    self._pending = [p for p in self._pending if p[1] is not future]
                    self._scheduled = False
                    others = self._pending
                if others:  # queued meanwhile, behind a flush that never came: try again
                    self._restart()
                raise StoreUnavailable(f"save: the database thread is gone: {exc!r}") from exc
        return await future

    def _restart(self) -> None:
        with self._lock:
            start, self._scheduled = not self._scheduled and bool(self._pending), True
        if not start:
            return
        try:
            self._runner.submit(self._flush)
        except BaseException as exc:
            with self._lock:
                batch, self._pending, self._scheduled = self._pending, [], False
            for _, future, loop in batch:
                err = StoreUnavailable(f"save: the database thread is gone: {exc!r}")
                err.__cause__ = exc
                try:
                    loop.call_soon_threadsafe(_settle, future, err)
                except RuntimeError:
                    pass

    # ------------------------------------------------------------------ in the file's thread

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending, self._scheduled = self._pending, [], False
        outcomes: list[Any]
        try:
            conn = self.held.get(self._engine)
            try:
                outcomes = self._run(conn, [w for w, _, _ in batch])
            finally:
                self.held.done()
        except BaseException as exc:  # e.g. the connection could not be made
            outcomes = [self._error(exc) for _ in batch]
        for (_, future, loop), outcome in zip(batch, outcomes, strict=True):
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # that event loop is closed: nobody waits any more
                pass

    def _error(self, exc: BaseException) -> BaseException:
        """A new error object for one save of a failed batch (never one shared by several)."""
        err: BaseException = self._wrap(exc, "save")
        if err is exc:  # not a driver error: wrap it anyway, so each caller gets its own
            err = StoreUnavailable(f"save: {exc!r}")
            err.__cause__ = exc
        return err

    def _run(self, conn: sqlite3.Connection, works: list[Work]) -> list[Any]:
        try:
            conn.execute("BEGIN IMMEDIATE")  # take the write lock now, not half-way
        except sqlite3.Error as exc:
            return [self._error(exc) for _ in works]
        alone = len(works) == 1
        outcomes: list[Any] = []
        for work in works:
            if not alone:
                conn.execute(f"SAVEPOINT {_SAVEPOINT}")
            error: Exception | None = None
            try:
                applied = work(conn)
            except Exception as exc:
                applied, error = False, exc
            if not alone:
                if not applied:
                    conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
                conn.execute(f"RELEASE {_SAVEPOINT}")
            outcomes.append(self._wrap(error, "save") if error is not None else applied)
        if not any(o is True for o in outcomes):
            conn.rollback()
            return outcomes
        try:
            conn.commit()
        except sqlite3.Error as exc:
            conn.rollback()
            return [_unknown(exc) if o is True else o for o in outcomes]
        return outcomes


def _unknown(cause: BaseException) -> StoreUnavailable:
    err = StoreUnavailable(
        f"save: COMMIT failed: {cause} (the write may or may not have been applied)"
    )
    err.__cause__ = cause
    return err


def _settle(future: asyncio.Future[bool], outcome: Any) -> None:
    if future.done():  # the caller was cancelled meanwhile
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
