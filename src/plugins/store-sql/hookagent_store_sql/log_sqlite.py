"""SQLite's one-transaction path for the session log: a warm ``commit`` or ``acquire`` as
plain ``sqlite3`` calls in the database file's own thread (``runner.ThreadRunner``), on a
connection of the engine's pool: ``BEGIN IMMEDIATE``, one conditional ``UPDATE ...
RETURNING`` of the head, the commit row's ``INSERT`` (and the seal's on a finish),
``COMMIT``. The locked path read the head first (``SELECT``) and ran every statement
through SQLAlchemy Core, whose client CPU was larger than SQLite's own.

Why it stays exact (the argument of ``log_fast``, with the file's write lock for ``rev``):
``BEGIN IMMEDIATE`` takes the write lock before anything is read, so the ``UPDATE``'s
conditions see the newest head, and it writes only on a head where the rules have a single
answer (the writer's epoch, owner and unexpired lease on the host's clock, ``seq`` equal to
``expected_seq``, no commit row under the batch id's hash, none starting past
``expected_seq``; acquire: the owner not sealed and the lease free, expired or its own).
Anything else (no row updated, a unique key met a row planted by hand, busy, an I/O error
at ``COMMIT``) is rolled back and answered ``None``: the caller then runs the locked
transaction, whose answer is the answer (a commit that did land is found there and
answered as the duplicate, with the same seqs).

Why a lease change is not synced (``PRAGMA synchronous = NORMAL`` around its transaction;
the file's level is restored before the connection goes back to the pool, or it is
dropped): the log is host-local on SQLite (``locality = "host"``), so every reader and
writer of the file is a process of this host and sees a committed transaction at once,
synced or not (WAL: the frames are in the file, the index in shared memory). What an
unsynced transaction risks is a power loss or an OS crash, which leaves no process of the
host alive: no writer holds the lost epoch any more. WAL keeps transactions atomic and in
order under ``NORMAL`` (a checksummed frame chain; a checkpoint syncs before it copies), and
a later synced commit syncs the whole WAL file, so a commit that survives always has the
acquire it was fenced by. A lost acquire, renew or release only rolls the head back to an
earlier lease of a writer that is gone (it expires); commits and seals stay synced. Only in
WAL mode (``prepare_schema`` sets it): a rollback journal under ``NORMAL`` may corrupt.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from hookagent.sessionlog import LogHead
from sqlalchemy.engine import Connection

from .log_schema import LogTables, read_sql
from .runner import ThreadRunner, in_transaction
from .sqlite_direct import wrap

T = TypeVar("T")
HEAD = "seq, epoch, owner, lease_until, commit_id, checkpoint_seq"
LOWERED = ("FULL", "EXTRA")  # the levels a lease change drops to NORMAL


def head_from(row: tuple[Any, ...]) -> LogHead:
    seq, epoch, owner, lease, commit_id, checkpoint = row
    return LogHead(int(seq), int(epoch), owner, float(lease), commit_id, int(checkpoint))


class SqliteLogFast:
    """The statements (table names from the validated configuration, quoted; every value a
    bound parameter) and the thread-side transactions."""

    def __init__(self, runner: ThreadRunner, tables: LogTables, prep: Any, sync: str) -> None:
        self._runner, self._engine = runner, runner.engine
        self._sync = sync.upper()
        self._wal: bool | None = None  # the file's journal mode, read once
        heads, commits = prep.format_table(tables.heads), prep.format_table(tables.commits)
        seals = prep.format_table(tables.seals)
        # ?1 u, ?2 s, ?3 owner, ?4 owner hash, ?5 now
        self.acquire_sql = f"""UPDATE {heads}
SET epoch = epoch + 1, owner = ?3, lease_until = ?5 + ?6, rev = rev + 1
WHERE user_id = ?1 AND session_id = ?2 AND (owner IS NULL OR owner = ?3 OR lease_until <= ?5)
  AND NOT EXISTS (SELECT 1 FROM {seals} x WHERE x.user_id = ?1 AND x.session_id = ?2
                  AND x.owner_hash = ?4 AND x.owner = ?3)
RETURNING {HEAD}"""  # noqa: S608
        # ?6 epoch, ?7 expected, ?8 last, ?9 batch id, ?10 its hash, ?11 checkpoint seq or 0
        where = f"""WHERE user_id = ?1 AND session_id = ?2 AND epoch = ?6 AND owner = ?3
  AND seq = ?7 AND lease_until > ?5
  AND COALESCE((SELECT max(c.first_seq) FROM {commits} c
                WHERE c.user_id = ?1 AND c.session_id = ?2), 0) <= ?7
  AND NOT EXISTS (SELECT 1 FROM {commits} c WHERE c.user_id = ?1 AND c.session_id = ?2
                  AND c.batch_hash = ?10)
RETURNING {HEAD}"""  # noqa: S608
        set_ = """SET seq = ?8, commit_id = ?9,
    checkpoint_seq = CASE WHEN ?11 > 0 THEN ?11 ELSE checkpoint_seq END, rev = rev + 1"""
        self.commit_sql = {
            finish: f"UPDATE {heads} {set_}{', owner = NULL, lease_until = 0' if finish else ''}"
            f"\n{where}"
            for finish in (False, True)
        }
        self.insert_sql = f"""INSERT INTO {commits}
    (user_id, session_id, first_seq, last_seq, batch_hash, batch_id, digest, data)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""  # noqa: S608
        self.read_sql = read_sql(heads, commits, ("?1", "?2", "?3"))
        self.read_one_sql = read_sql(heads, commits, ("?1", "?2", "?3"), one=True)
        self.seal_sql = f"""INSERT INTO {seals} (user_id, session_id, owner_hash, owner)
VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"""  # noqa: S608

    # ------------------------------------------------------------------ in the file's thread

    def _with_conn(self, fn: Callable[[sqlite3.Connection, Callable[[Any], None]], T]) -> T | None:
        try:
            fairy = self._engine.raw_connection()
        except sqlite3.Error:  # the locked path reports it, typed
            return None
        try:
            conn = fairy.driver_connection
            assert conn is not None
            return fn(conn, fairy.invalidate)
        finally:
            fairy.close()

    def _lowered(self, conn: sqlite3.Connection) -> bool:
        """Whether a lease change may run unsynced here (WAL, a synced level configured)."""
        if self._sync not in LOWERED:
            return False
        if self._wal is None:
            mode = conn.execute("PRAGMA journal_mode").fetchone()
            self._wal = str(mode[0]).lower() == "wal"
        return self._wal

    def _unsynced(
        self, conn: sqlite3.Connection, invalidate: Callable[[Any], None], fn: Callable[[], T]
    ) -> T:
        """``fn()`` (one whole transaction) under ``synchronous = NORMAL`` when allowed, the
        configured level restored after it (the connection is dropped if that fails)."""
        if not self._lowered(conn):
            return fn()
        conn.execute("PRAGMA synchronous = NORMAL")
        try:
            return fn()
        finally:
            try:
                if conn.in_transaction:
                    conn.rollback()
                conn.execute(f"PRAGMA synchronous = {self._sync}")
            except Exception as exc:  # never hand a lowered connection back to the pool
                invalidate(exc)

    @staticmethod
    def _one_transaction(conn: sqlite3.Connection, write: Callable[[], Any]) -> Any:
        """``write()`` between ``BEGIN IMMEDIATE`` and ``COMMIT``; None (rolled back) if it
        answered None or anything failed: the locked path decides then."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error:
            return None
        try:
            got = write()
            if got is None:
                conn.rollback()
                return None
            conn.commit()
            return got
        except sqlite3.Error:
            if conn.in_transaction:
                conn.rollback()
            return None

    def _acquire(
        self, args: tuple[Any, ...], conn: sqlite3.Connection, invalidate: Callable[[Any], None]
    ) -> Any:
        def write() -> Any:
            got = conn.execute(self.acquire_sql, args).fetchall()
            return got[0] if len(got) == 1 else None

        return self._unsynced(conn, invalidate, lambda: self._one_transaction(conn, write))

    def _commit(
        self,
        finish: bool,
        args: tuple[Any, ...],
        row: tuple[Any, ...],
        seal: tuple[Any, ...] | None,
        conn: sqlite3.Connection,
        _invalidate: Callable[[Any], None],
    ) -> Any:
        def write() -> Any:
            got = conn.execute(self.commit_sql[finish], args).fetchall()
            if len(got) != 1:
                return None
            conn.execute(self.insert_sql, row)
            if seal is not None:
                conn.execute(self.seal_sql, seal)
            return got[0]

        return self._one_transaction(conn, write)

    def _read(
        self, args: tuple[str, str, int], conn: sqlite3.Connection, _inv: Any, one: bool = False
    ) -> Any:
        try:
            return conn.execute(self.read_one_sql if one else self.read_sql, args).fetchall()
        except sqlite3.Error as exc:  # typed as SQLAlchemy's: busy is retried by the caller
            raise wrap(exc, "read_after") from exc

    def lease_write(self, fn: Callable[[Connection], T], committing: list[bool]) -> T:
        """A locked-path lease transaction (``runner.ThreadRunner._write``), unsynced."""
        with self._engine.connect() as sa_conn:
            raw = sa_conn.connection.driver_connection
            assert raw is not None
            run: Callable[[], T] = lambda: in_transaction(sa_conn, fn, committing, True)  # noqa: E731
            return self._unsynced(raw, sa_conn.invalidate, run)

    # ------------------------------------------------------------------ the caller's side

    async def acquire(
        self, u: str, s: str, owner: str, owner_hash: str, now: float, lease: float
    ) -> LogHead | None:
        args = (u, s, owner, owner_hash, now, lease)
        row = await self._runner.call(self._with_conn, lambda c, f: self._acquire(args, c, f))
        return None if row is None else head_from(row)

    async def read(self, u: str, s: str, after: int, one: bool = False) -> list[Any]:
        """The rows of ``LogQueries.read(None)`` (``one``: ``read(1)``) as sqlite3 tuples
        (no SQLAlchemy row)."""

        def run() -> Any:
            try:
                fairy = self._engine.raw_connection()
            except sqlite3.Error as exc:
                raise wrap(exc, "connect") from exc
            try:
                conn = fairy.driver_connection
                assert conn is not None
                return self._read((u, s, after), conn, None, one)
            finally:
                fairy.close()

        return list(await self._runner.call(run))

    async def commit(
        self,
        key: tuple[str, str, str, str],
        writer_epoch: int,
        expected: int,
        last: int,
        batch: tuple[str, str, str, bytes],
        checkpoint: int,
        now: float,
        finish: bool,
    ) -> LogHead | None:
        """key (u, s, owner, owner hash), batch (id, its hash, digest, data): the new head,
        or None (nothing written: the locked path answers)."""
        u, s, owner, oh = key
        b, bh, digest, data = batch
        args = (u, s, owner, oh, now, writer_epoch, expected, last, b, bh, checkpoint)
        row = (u, s, expected + 1, last, bh, b, digest, data)
        seal = (u, s, oh, owner) if finish else None
        got = await self._runner.call(
            self._with_conn, lambda c, f: self._commit(finish, args, row, seal, c, f)
        )
        return None if got is None else head_from(got)


class LeaseRunner:
    """The runner of the locked path's lease changes (``Retrying`` calls ``write``)."""

    def __init__(self, runner: ThreadRunner, fast: SqliteLogFast) -> None:
        self._runner, self._fast = runner, fast

    async def write(self, fn: Callable[[Connection], T], committing: list[bool]) -> T:
        return await self._runner.call(self._fast.lease_write, fn, committing)
