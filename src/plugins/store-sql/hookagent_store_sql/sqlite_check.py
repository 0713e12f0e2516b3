"""SQLite's warm version check on the event loop's thread, with no hop into the file's thread.

Why: a warm load (the slot is cached) is a version check. In the file's thread it cost a
round trip (``run_in_executor``: the executor's queue, the worker's wake-up, the future's
hand-back through the loop's self-pipe) several times the statement's own cost. Here it is
one statement on a connection of its own, in autocommit, the load's three index seeks
answering only "as cached?": ``version``, ``generation``, ``message_count``, whether the
stored head is exactly the cached one (compared by SQLite: the head is not sent back), and
whether any message row or chunk lies past the cached count. All as cached (no row past):
the load is served from the cache, as the load in the thread would have served it. Anything else (another version, another head, no row, any error) answers
"not known" and the load goes to the file's thread as before, which reads and checks the
slot (``verify``), retries busy, and types its errors. So this path can only confirm what
the cache already says; it never decides a conflict, an absence or an error.

Why the loop may run it: the database is in WAL mode (``prepare_schema`` sets it), where a
reader takes no lock a writer waits for and waits for no writer: it reads the last commit's
snapshot. Its busy timeout is 0, so in the rare cases where SQLite would make a reader
wait (another connection recovering the WAL) it answers busy at once, and that is "not
known". What is left is a primary-key lookup in a local file the writer just touched: a few
pages from the OS cache, microseconds, less than the loop spent handing the read to the
thread. ``query_only`` keeps the connection from writing. The connection is opened in the
file's thread (during a load there), never on the loop; a forked child does not use it, and
it is reopened when the engine is disposed (as the file thread's held connection is).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Any

from sqlalchemy.engine import Engine

from .cache import CachedSlot

_BUSY = 5  # SQLITE_BUSY, the primary code of every busy error (extended codes keep it)


class LoopCheck:
    """The loop thread's read-only connection and its one statement."""

    def __init__(self, engine: Engine, slots: str, messages: str, chunks: str) -> None:
        self._engine = engine
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._pool: Any = None  # the engine's pool it was opened beside (disposed: reopen)
        # held only across one synchronous statement: another thread using the store at the
        # same moment finds it taken and takes the file's thread instead (never waits)
        self._lock = threading.Lock()
        # the load's statement, answering only "as cached?": the head row's counters, the
        # head compared, and whether any message row or chunk lies past the cached count
        # (the load would read and check it: another writer's rows, or damage)
        self.sql = f"""
SELECT version, generation, message_count, head = ?,
    EXISTS (SELECT 1 FROM {messages}
            WHERE user_id = s.user_id AND slot_hash = s.slot_hash AND seq >= ?)
    OR EXISTS (SELECT 1 FROM {chunks}
               WHERE user_id = s.user_id AND slot_hash = s.slot_hash AND end_seq > ?)
FROM {slots} s WHERE user_id = ? AND slot_hash = ?"""  # noqa: S608 - configured table names
        self.statements = 0
        """Statements run on the loop's thread (for the tests: a count, never a time)."""

    def unchanged(self, user_id: str, h: str, cached: CachedSlot) -> bool:
        """True: the stored slot is exactly ``cached`` (version, generation, count, head).
        False: not known here (anything else): the file's thread must read the slot."""
        if self._conn is None or not self._lock.acquire(blocking=False):
            return False
        try:
            conn = self._conn  # read under the lock: ``open_in_thread`` may have swapped it
            if conn is None:
                return False
            if self._pid != os.getpid():  # a forked child: the parent's connection is not ours
                self._conn = None
                return False
            if self._engine.pool is not self._pool:  # disposed, as the held one is: reopen
                self._discard()
                return False
            self.statements += 1
            n = cached.length
            rows = conn.execute(self.sql, (cached.head, n, n, user_id, h)).fetchall()
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            if code is None or code & 0xFF != _BUSY:  # busy: the file's thread retries it
                self._discard()  # anything else: the thread reads, reports and reopens
            return False
        finally:
            self._lock.release()
        if len(rows) != 1:
            return False
        version, generation, count, same, past = rows[0]
        return bool(
            same == 1
            and past == 0
            and version == cached.version
            and generation == cached.generation
            and count == cached.length
        )

    def open_in_thread(self) -> None:
        """In the file's thread: open the connection if there is none (errors are ignored:
        without it every load takes the file's thread, as before)."""
        if self._conn is not None and self._pid == os.getpid() and self._engine.pool is self._pool:
            return
        try:
            conn = self._connect()
        except (sqlite3.Error, OSError):
            return
        with self._lock:
            old, old_pid = self._conn, self._pid
            self._conn, self._pid, self._pool = conn, os.getpid(), self._engine.pool
        if old is not None and old_pid == self._pid:  # (a forked child leaves its parent's)
            _close(old)

    def _connect(self) -> sqlite3.Connection:
        args, kwargs = self._engine.dialect.create_connect_args(self._engine.url)
        kwargs = {**kwargs, "isolation_level": None, "check_same_thread": False}
        conn: sqlite3.Connection = sqlite3.connect(*args, **kwargs)  # type: ignore[call-overload]
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA query_only = ON")
            mode = conn.execute("PRAGMA journal_mode").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise sqlite3.OperationalError("not in WAL mode: the loop does not read")
            conn.execute(self.sql, ("", 0, 0, "", "")).fetchall()  # the schema read, here
        except BaseException:
            conn.close()
            raise
        return conn

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _close(conn)

    def close(self) -> None:
        with self._lock:
            self._discard()


def _close(conn: Any) -> None:
    try:
        conn.close()
    except sqlite3.Error:  # it is not used again either way
        pass
