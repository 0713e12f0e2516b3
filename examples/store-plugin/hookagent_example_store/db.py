"""One sqlite3 connection per store, used from worker threads, and SQLite errors made typed.

``sqlite3`` is blocking: every operation runs in ``anyio.to_thread.run_sync`` under a lock
(one connection cannot run two transactions at once). Writers use ``BEGIN IMMEDIATE`` so
that the version check and the write are one atomic step, across processes too.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio.to_thread
from hookagent.errors import (
    CorruptState,
    SessionStoreError,
    StorageDurabilityError,
    StorageFull,
    StoreConfigurationError,
    StoreUnavailable,
)

from .schema import DDL, SCHEMA_VERSION

T = TypeVar("T")


class Database:
    """A lazily opened connection to one SQLite file (or ``:memory:``)."""

    def __init__(self, path: str, *, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._poisoned = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` in a worker thread, with SQLite errors translated."""
        return await anyio.to_thread.run_sync(self._run, fn, args)

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._lock:
            if self._closed:
                why = "poisoned by a failed fsync" if self._poisoned else "closed"
                raise StoreUnavailable(f"the example-sqlite store on {self.path!r} is {why}")
            try:
                return fn(self._connect(), *args)
            except sqlite3.Error as exc:
                error = translate(exc, self.path)
                if isinstance(error, StorageDurabilityError):
                    self._poison()  # after a failed fsync nothing this handle wrote is certain
                raise error from exc

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        # isolation_level=None: no implicit transactions, we say BEGIN and COMMIT ourselves
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            if self.path != ":memory:":
                _use_wal(conn, self.busy_timeout)  # readers do not block the writer
            conn.execute("PRAGMA synchronous=FULL")  # a committed save survives power loss
            with transaction(conn, immediate=True):
                found = conn.execute("PRAGMA user_version").fetchone()[0]
                if found > SCHEMA_VERSION:
                    raise StoreConfigurationError(
                        f"{self.path!r} has schema version {found}; this example store "
                        f"knows up to {SCHEMA_VERSION}"
                    )
                for statement in DDL:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _poison(self) -> None:
        self._closed = self._poisoned = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def aclose(self) -> None:
        def close() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(close)


@contextmanager
def transaction(conn: sqlite3.Connection, *, immediate: bool) -> Iterator[None]:
    """BEGIN (IMMEDIATE takes the write lock at once), COMMIT, or ROLLBACK on any error."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the original error is the one that matters
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise


def translate(exc: sqlite3.Error, path: str) -> SessionStoreError:
    """The hookagent error for a SQLite failure (the original stays chained as the cause)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    where = f"SQLite database {path!r}"
    if name == "SQLITE_FULL":
        return StorageFull(f"{where} is full: {exc}")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return CorruptState(f"{where} is corrupt: {exc}")
    if name.startswith("SQLITE_IOERR_FSYNC") or name == "SQLITE_IOERR_DIR_FSYNC":
        return StorageDurabilityError(f"{where}: fsync failed, the write may be lost: {exc}")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH", "SQLITE_READONLY")):
        return StoreConfigurationError(f"{where} cannot be opened for writing: {exc}")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreUnavailable(f"{where} stayed locked by another writer: {exc}")
    return StoreUnavailable(f"{where} failed: {type(exc).__name__}: {exc}")


def _use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL. SQLite does not call its busy handler for this change, so two
    handles opening a new file at once can see "database is locked": wait and retry for up
    to the busy timeout (once the file is in WAL mode the pragma takes no lock)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
