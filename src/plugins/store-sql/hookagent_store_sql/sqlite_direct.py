"""SQLite's hot path: the load, the append and the create as plain ``sqlite3`` calls in the
database file's own thread (``runner.ThreadRunner``), on a connection of the engine's pool.

Why: each operation is already one hop into that thread; inside it, SQLAlchemy Core cost
about as much client CPU as SQLite itself (statement caching, parameter processing, result
rows, the ``Connection`` and transaction objects). Here a write is ``BEGIN IMMEDIATE``, the
compare-and-set ``UPDATE`` (rowcount checked) or the create's ``INSERT ... ON CONFLICT DO
NOTHING``, the ``INSERT`` of the save's chunk (a row per save), ``COMMIT``: the same statements as the
transaction path, in one transaction (shared with the saves queued meanwhile: group commit,
``sqlite_batch``), with the same writer lock (the thread) and the same busy rules (errors are wrapped as SQLAlchemy errors, so ``database is locked`` is retried by
the store as before). The tables are the ones SQLAlchemy created; timestamps are written in
SQLAlchemy's SQLite format.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from hookagent.messages import Msg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from . import sqlite_cold
from .cache import CachedSlot
from .runner import ThreadRunner
from .save import Chunk
from .schema import Tables
from .sqlite_batch import GroupCommit
from .sqlite_check import LoopCheck

T = TypeVar("T")


def timestamp(value: datetime) -> str:
    """The text SQLAlchemy's ``DateTime`` stores on SQLite (always with microseconds), of a
    naive datetime (``utcnow``'s): ``isoformat`` writes it without ``strftime``'s cost."""
    if value.tzinfo is not None:
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value.isoformat(" ", "microseconds")


def wrap(exc: BaseException, statement: str) -> BaseException:
    """The SQLAlchemy error SQLAlchemy would have raised for a ``sqlite3`` error."""
    if not isinstance(exc, sqlite3.Error):
        return exc
    cls: type[sa_exc.DBAPIError] = sa_exc.DatabaseError
    if isinstance(exc, sqlite3.OperationalError):
        cls = sa_exc.OperationalError
    elif isinstance(exc, sqlite3.IntegrityError):
        cls = sa_exc.IntegrityError
    elif isinstance(exc, sqlite3.DataError):
        cls = sa_exc.DataError
    elif isinstance(exc, sqlite3.ProgrammingError):
        cls = sa_exc.ProgrammingError
    return cls(statement, None, exc)


class SqliteDirect:
    def __init__(self, runner: ThreadRunner, tables: Tables) -> None:
        self._runner = runner
        self._engine: Engine = runner.engine
        self._batch = GroupCommit(runner, self._engine, wrap)
        prep = self._engine.dialect.identifier_preparer
        slots, messages = prep.format_table(tables.slots), prep.format_table(tables.messages)
        chunks = prep.format_table(tables.chunks)
        self.check = LoopCheck(self._engine, slots, messages, chunks)
        # only the table names are formatted in: from the validated configuration, quoted
        self.load_sql = f"""
SELECT -1, version, generation, message_count, head FROM {slots}
WHERE user_id = ? AND slot_hash = ?
UNION ALL
SELECT seq, NULL, NULL, NULL, body FROM {messages}
WHERE user_id = ? AND slot_hash = ? AND seq >= ?
UNION ALL
SELECT end_seq, NULL, NULL, n, body FROM {chunks}
WHERE user_id = ? AND slot_hash = ? AND end_seq > ?"""  # noqa: S608
        self.cas_sql = f"""
UPDATE {slots} SET version = ?, message_count = ?, head = ?, updated_at = ?
WHERE user_id = ? AND slot_hash = ? AND version = ? AND generation = ? AND message_count = ?
    AND head = ?"""  # noqa: S608
        self.create_sql = f"""
INSERT INTO {slots} (user_id, slot_hash, session_id, state_key, version, generation,
    message_count, head, created_at, updated_at)
VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?)
ON CONFLICT (user_id, slot_hash) DO NOTHING"""  # noqa: S608
        self.orphans_sql = f"DELETE FROM {messages} WHERE user_id = ? AND slot_hash = ?"  # noqa: S608
        self.orphan_chunks_sql = f"DELETE FROM {chunks} WHERE user_id = ? AND slot_hash = ?"  # noqa: S608
        self.insert_sql = f"""
INSERT INTO {chunks} (user_id, slot_hash, end_seq, n, body) VALUES (?, ?, ?, ?, ?)"""  # noqa: S608
        self._cold_sql = (
            sqlite_cold.head_sql(slots),
            sqlite_cold.rows_sql(messages),
            sqlite_cold.chunks_sql(chunks),
        )
        self.probe_sql = f"""
SELECT version, generation, message_count,
    (SELECT body FROM {chunks} WHERE user_id = s.user_id AND slot_hash = s.slot_hash
     AND end_seq = ?),
    head = ? AND updated_at = ?
FROM {slots} s WHERE user_id = ? AND slot_hash = ?"""  # noqa: S608

    # ------------------------------------------------------------------ plumbing

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._runner.call(self._in_thread, fn)

    def _in_thread(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        held = self._batch.held  # the thread's connection, shared with the group commit
        try:
            conn = held.get(self._engine)
        except sqlite3.Error as exc:  # e.g. the file cannot be opened: typed like the rest
            raise wrap(exc, "connect") from exc
        try:
            return fn(conn)
        finally:
            held.done()

    async def aclose(self) -> None:
        """Give the thread's connection back to the pool (before the engine is disposed)."""
        self.check.close()
        await self._runner.call(self._batch.held.release)

    def unchanged(self, user_id: str, h: str, cached: CachedSlot) -> bool:
        """The warm load's version check on the loop's thread (``sqlite_check``): True if
        the slot is exactly ``cached``; False if only the file's thread can tell."""
        return self.check.unchanged(user_id, h, cached)

    # ------------------------------------------------------------------ statements

    async def load(self, user_id: str, h: str, start: int) -> list[Any]:
        """[(seq=-1, version, generation, count, head), (seq, _, _, _, body) ...] or []."""
        args = (user_id, h, user_id, h, start, user_id, h, start)

        def run(conn: sqlite3.Connection) -> list[Any]:
            try:
                rows = conn.execute(self.load_sql, args).fetchall()
            except sqlite3.Error as exc:
                raise wrap(exc, "load") from exc
            self.check.open_in_thread()  # once: the next warm loads check on the loop
            return rows

        return await self._call(run)

    async def load_cold(self, user_id: str, h: str) -> tuple[Any, list[Msg]] | None:
        """The whole slot, read in the thread while the event loop decodes it (see
        ``sqlite_cold``): ((version, generation, count, head), messages), or None if absent.
        Raises ``sqlite_cold.Mismatch`` when the ordinary row read must decide."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def emit(item: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def run(conn: sqlite3.Connection) -> None:
            try:
                sqlite_cold.read_in_thread(conn, self._cold_sql, user_id, h, emit)
            except sqlite3.Error as exc:
                raise wrap(exc, "load") from exc

        done = asyncio.ensure_future(self._call(run))
        try:
            return await sqlite_cold.decode_stream(queue, done)
        finally:
            if not done.done():  # we stopped early (a bad chunk, a cancel): let it finish
                done.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def append(
        self,
        key: tuple[str, str, str, str],
        cas: tuple[int, int, int, str],
        new: tuple[int, int, str, datetime],
        rows: list[Chunk],
    ) -> bool:
        """key (u, h, s, k), cas (version, generation, count, the head this instance checked),
        new (version, count, head, now):
        True if applied, False if the compare-and-set matched nothing (nothing written)."""
        u, h = key[0], key[1]
        version, count, head, now = new
        cas_args = (version, count, head, timestamp(now), u, h, *cas)
        values = [(u, h, end, n, body) for end, n, body in rows]

        def body(conn: sqlite3.Connection) -> bool:
            if conn.execute(self.cas_sql, cas_args).rowcount != 1:
                return False
            if values:
                conn.executemany(self.insert_sql, values)
            return True

        return await self._batch.write(body)

    async def create(
        self,
        key: tuple[str, str, str, str],
        generation: int,
        head: str,
        now: datetime,
        rows: list[Chunk],
    ) -> bool:
        """True if the slot was created; False if it exists (nothing written)."""
        u, h, s, k = key
        ts = timestamp(now)
        count = rows[-1][0] if rows else 0
        slot_args = (u, h, s, k, generation, count, head, ts, ts)
        values = [(u, h, end, n, body) for end, n, body in rows]

        def body(conn: sqlite3.Connection) -> bool:
            if conn.execute(self.create_sql, slot_args).rowcount != 1:
                return False
            # rows left behind under this slot's address must not leak into the new slot
            conn.execute(self.orphans_sql, (u, h))
            conn.execute(self.orphan_chunks_sql, (u, h))
            if values:
                conn.executemany(self.insert_sql, values)
            return True

        return await self._batch.write(body)

    async def probe(self, user_id: str, h: str, seq: int, head: str, now: datetime) -> Any:
        """(version, generation, count, body at seq, ours) of the slot, or None if absent;
        ours: its head and updated_at are exactly the ones the save wrote."""
        args = (seq, head, timestamp(now), user_id, h)

        def run(conn: sqlite3.Connection) -> Any:
            try:
                return conn.execute(self.probe_sql, args).fetchone()
            except sqlite3.Error as exc:
                raise wrap(exc, "load") from exc

        return await self._call(run)

    async def warm(self) -> None:
        """Open the thread's first connection (pragmas run) and read through it once."""
        await self.load("", "", 0)
