"""PostgreSQL's hot path: the load and the common saves sent by asyncpg itself, one statement
(one round trip) each, on a connection checked out of the engine's own pool.

Why: through SQLAlchemy a statement costs about 0.3 ms of client CPU (compilation cache,
parameter processing, result rows) plus greenlet hops; a cold load of 4,000 rows spent most
of its time building SQLAlchemy rows. Here one greenlet hop checks a pooled connection out,
runs one asyncpg statement (prepared once per connection by asyncpg's statement cache) and
checks it back in; rows stay asyncpg ``Record`` tuples. The pool, its size options,
``connect_args`` and ``engine.dispose()`` are SQLAlchemy's; statements are prepared by asyncpg's
own statement cache (``connect_args={"statement_cache_size": 0}`` turns it off, e.g. behind
pgbouncer in transaction mode).

Each statement is one implicit transaction (autocommit), so it applies wholly or not at all:
* load: ``UNION ALL`` of the head row, the message rows past ``start`` and the chunks ending
  past it (one statement, one snapshot; no join and no sort: the rows come in index order
  and the store checks); a cold load (nothing held) gets the head, the rows as two arrays
  and the chunks as three, in one row instead;
* append: a writable CTE whose compare-and-set ``UPDATE`` (version, generation, count and the
  MD5 of the head this instance checked) gates the ``INSERT`` of the save's chunk(s);
* create: a writable CTE whose ``INSERT ... ON CONFLICT DO NOTHING`` of the slot gates the
  chunks (rows and chunks left under the address are deleted or replaced in the same
  statement).
Anything else (fences, rewrites, unconditional saves, deletes) uses the transaction path.
Driver errors are wrapped as SQLAlchemy ``DBAPIError`` (``connection_invalidated`` when the
connection died). As in SQLAlchemy, a dead connection invalidates the whole pool (every
connection made before it is replaced at its next check-out), and a checked-out connection
asyncpg already knows is closed is dropped before anything is sent on it. An error raised
before the statement was sent carries ``NOT_SENT``; one where the server ended the session
(``57P0x``: the backend exits, so its statement can no longer commit) carries ``SERVER_ENDED``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import asyncpg
from hookagent.errors import StoreUnavailable
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from .save import Chunk
from .schema import Tables

try:  # SQLAlchemy 2.1 renamed await_only to await_
    from sqlalchemy.util import await_
except ImportError:  # pragma: no cover - SQLAlchemy 2.0
    from sqlalchemy.util import await_only as await_

T = TypeVar("T")
Columns = tuple[list[int], list[int], list[str]]

_DISCONNECT_STATES = ("08", "57")  # connection exception, operator intervention (terminate)
_NOT_DISCONNECT = ("57014",)  # query_canceled (statement timeout, pg_cancel_backend): rolled back
_CHECKOUTS = 3  # after the first dead one the pool is invalidated: the next is a fresh connection
NOT_SENT = "hookagent_not_sent"
"""Attribute set (True) on an error raised before the statement reached the server."""
SERVER_ENDED = "hookagent_server_ended"
"""Attribute set (True) when the server reported ending the session (57P01/57P02/...)."""


def _disconnect_state(state: str) -> bool:
    return state[:2] in _DISCONNECT_STATES and state not in _NOT_DISCONNECT


def usable(engine: AsyncEngine) -> bool:
    """The direct path needs the asyncpg driver (psycopg engines use the SQLAlchemy path)."""
    return engine.dialect.name == "postgresql" and engine.dialect.driver == "asyncpg"


def wrap(exc: BaseException, statement: str, disconnected: bool) -> BaseException:
    """The SQLAlchemy error SQLAlchemy itself would have raised for a driver error."""
    if isinstance(exc, sa_exc.SQLAlchemyError) or not isinstance(exc, Exception):
        return exc
    state = getattr(exc, "sqlstate", None) or ""
    disconnected = disconnected or _disconnect_state(state)
    cls: type[sa_exc.DBAPIError]
    if state[:2] == "22":
        cls = sa_exc.DataError
    elif state[:2] == "23":
        cls = sa_exc.IntegrityError
    elif state[:2] in ("42", "3F"):
        cls = sa_exc.ProgrammingError
    elif state[:2] in ("40", "53", *_DISCONNECT_STATES) or disconnected:
        cls = sa_exc.OperationalError
    elif isinstance(exc, asyncpg.InterfaceError):
        cls = sa_exc.InterfaceError
    else:
        cls = sa_exc.DatabaseError
    return cls(statement.strip().split("\n", 1)[0], None, exc, connection_invalidated=disconnected)


class PgDirect:
    def __init__(self, engine: AsyncEngine, tables: Tables) -> None:
        self._pool_engine = engine.sync_engine
        prep = engine.dialect.identifier_preparer
        slots, messages = prep.format_table(tables.slots), prep.format_table(tables.messages)
        chunks = prep.format_table(tables.chunks)
        # only the table names are formatted in: from the validated configuration, quoted
        # the head is sent only when it is not the one the caller holds ($4, $5: the version
        # and generation it holds; a version is written once per generation, and a
        # recreated slot draws a new random generation): an unchanged slot's load is a
        # version check (head NULL; the column is NOT NULL, so NULL says "yours")
        self.load_sql = f"""
SELECT -1 AS seq, version, generation, message_count,
    CASE WHEN version = $4 AND generation = $5 THEN NULL ELSE head END AS body
FROM {slots} WHERE user_id = $1 AND slot_hash = $2
UNION ALL
SELECT seq, NULL, NULL, NULL, body FROM {messages}
WHERE user_id = $1 AND slot_hash = $2 AND seq >= $3
UNION ALL
SELECT end_seq, NULL, NULL, n, body FROM {chunks}
WHERE user_id = $1 AND slot_hash = $2 AND end_seq > $3"""  # noqa: S608
        # a cold load (this instance holds nothing of the slot): the head row, the message
        # rows as two arrays and the chunks as three, in one row, so asyncpg builds one
        # record and the lists in C instead of a record per message (each aggregate follows
        # one scan: the i-th seq is the i-th body's, the i-th end_seq the i-th chunk's); the
        # client splits the chunks (on the server, string_to_array and unnest took 5.5-7.5 ms
        # of a 4,000-message load against 1.6-2.4 for this) and checks the tiling
        self.cold_sql = f"""
SELECT s.version, s.generation, s.message_count, s.head, m.seqs, m.bodies,
    c.ends, c.ns, c.chunks
FROM {slots} s, LATERAL (
    SELECT array_agg(seq) AS seqs, array_agg(body) AS bodies FROM {messages}
    WHERE user_id = s.user_id AND slot_hash = s.slot_hash
) m, LATERAL (
    SELECT array_agg(end_seq) AS ends, array_agg(n) AS ns, array_agg(body) AS chunks
    FROM {chunks}
    WHERE user_id = s.user_id AND slot_hash = s.slot_hash
) c
WHERE s.user_id = $1 AND s.slot_hash = $2"""  # noqa: S608
        chunk_rows = "unnest($10::int[], $11::int[], $12::text[]) AS r(end_seq, n, body)"
        self.append_sql = f"""
WITH upd AS (
    UPDATE {slots} SET version = $6, message_count = $7, head = $8, updated_at = $9
    WHERE user_id = $1 AND slot_hash = $2 AND version = $3
        AND generation = $4 AND message_count = $5 AND md5(convert_to(head, 'UTF8')) = $13
    RETURNING 1
), ins AS (
    INSERT INTO {chunks} (user_id, slot_hash, end_seq, n, body)
    SELECT $1, $2, r.end_seq, r.n, r.body FROM {chunk_rows}
    WHERE EXISTS (SELECT 1 FROM upd)
    RETURNING 1
)
SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM ins)"""  # noqa: S608
        # rows and chunks left under the address are deleted in the same statement; a
        # chunk of the new slot's own key is replaced (one statement's parts cannot see
        # each other's changes, so the delete spares it and the insert overwrites it)
        self.create_sql = f"""
WITH new_slot AS (
    INSERT INTO {slots} (user_id, slot_hash, session_id, state_key, version, generation,
        message_count, head, created_at, updated_at)
    VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8, $8)
    ON CONFLICT (user_id, slot_hash) DO NOTHING
    RETURNING 1
), orphans AS (
    DELETE FROM {messages}
    WHERE user_id = $1 AND slot_hash = $2 AND EXISTS (SELECT 1 FROM new_slot)
    RETURNING 1
), orphan_chunks AS (
    DELETE FROM {chunks}
    WHERE user_id = $1 AND slot_hash = $2 AND NOT (end_seq = ANY($9::int[]))
        AND EXISTS (SELECT 1 FROM new_slot)
    RETURNING 1
), ins AS (
    INSERT INTO {chunks} (user_id, slot_hash, end_seq, n, body)
    SELECT $1, $2, r.end_seq, r.n, r.body
    FROM unnest($9::int[], $10::int[], $11::text[]) AS r(end_seq, n, body)
    WHERE EXISTS (SELECT 1 FROM new_slot)
    ON CONFLICT (user_id, slot_hash, end_seq) DO UPDATE SET n = EXCLUDED.n,
        body = EXCLUDED.body
    RETURNING 1
)
SELECT (SELECT count(*) FROM new_slot), (SELECT count(*) FROM ins)"""  # noqa: S608
        self.probe_sql = f"""
SELECT s.version, s.generation, s.message_count,
    (SELECT c.body FROM {chunks} c
     WHERE c.user_id = s.user_id AND c.slot_hash = s.slot_hash AND c.end_seq = $3),
    s.head = $4 AND s.updated_at = $5
FROM {slots} s WHERE s.user_id = $1 AND s.slot_hash = $2"""  # noqa: S608

    # ------------------------------------------------------------------ plumbing

    async def run(self, statement: str, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """``fn(connection)`` on a pooled connection (one greenlet hop for check-out/in)."""
        return await greenlet_spawn(self._in_greenlet, statement, fn)

    def _in_greenlet(self, statement: str, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        for attempt in range(_CHECKOUTS):
            try:
                fairy = self._pool_engine.raw_connection()
            except Exception as exc:  # the connect failed: nothing was sent
                disconnected = isinstance(exc, (OSError, ConnectionError))
                err = _marked(wrap(exc, statement, disconnected), not_sent=True)
                if err is exc:
                    raise
                raise err from exc
            try:
                driver = fairy.driver_connection
                assert driver is not None
                if driver.is_closed():  # died while pooled (restart, idle kill): take another
                    self._invalidate_pool(fairy, None)
                    continue
                try:
                    return await_(fn(driver))
                except Exception as exc:
                    state = getattr(exc, "sqlstate", None) or ""
                    # asyncpg checks the connection is open before it sends anything
                    unsent = isinstance(exc, asyncpg.InterfaceError) and str(exc) == (
                        "connection is closed"
                    )
                    dead = (
                        unsent
                        or driver.is_closed()
                        or isinstance(exc, (OSError, ConnectionError, TimeoutError))
                        or isinstance(exc, asyncpg.InterfaceError)
                        or _disconnect_state(state)
                    )
                    if dead:
                        self._invalidate_pool(fairy, exc)
                    if unsent and attempt + 1 < _CHECKOUTS:
                        continue
                    ended = state[:3] == "57P"
                    err = _marked(wrap(exc, statement, dead), not_sent=unsent, ended=ended)
                    if err is exc:
                        raise
                    raise err from exc
                except BaseException as exc:  # cancelled mid-statement: the protocol state is lost
                    fairy.invalidate(exc)
                    raise
            finally:
                fairy.close()
        cause = ConnectionError(f"no live pooled connection after {_CHECKOUTS} check-outs")
        err = sa_exc.OperationalError(statement, None, cause, connection_invalidated=True)
        raise _marked(err, not_sent=True) from cause

    def _invalidate_pool(self, fairy: Any, exc: BaseException | None) -> None:
        """What SQLAlchemy does on a disconnect: drop this connection, and mark every pooled
        connection made before now for replacement at its next check-out (a restart or an
        idle kill usually took them all)."""
        pool = self._pool_engine.pool
        invalidate = getattr(pool, "_invalidate", None)
        if invalidate is not None:  # SQLAlchemy's own call on a disconnect (it checks the
            invalidate(fairy, exc)  # connection's age, so a stale one spares fresh ones)
        else:  # pragma: no cover - the attribute SQLAlchemy 2.x uses for the same thing
            pool._invalidate_time = time.time()
        if fairy.is_valid:
            fairy.invalidate(exc)

    # ------------------------------------------------------------------ statements

    async def load(
        self, user_id: str, h: str, start: int, held: tuple[int, int] = (-1, -1)
    ) -> list[Any]:
        """[(seq=-1, version, generation, count, head), (seq, _, _, _, body) ...] or [];
        head None when the slot is still at ``held`` (the version and generation whose head
        the caller holds)."""
        sql = self.load_sql
        return await self.run(sql, lambda c: c.fetch(sql, user_id, h, start, *held))

    async def load_cold(self, user_id: str, h: str) -> Any:
        """(version, generation, count, head, seqs, bodies, ends, ns, chunks) of the whole
        slot, or None if there is no slot; seqs and bodies are lists in the same order, and
        ends, ns and chunks (their bodies) (None: no rows, no chunks)."""
        sql = self.cold_sql
        return await self.run(sql, lambda c: c.fetchrow(sql, user_id, h))

    async def append(
        self,
        key: tuple[str, str, str, str],
        cas: tuple[int, int, int, str],
        new: tuple[int, int, str, datetime],
        rows: list[Chunk],
    ) -> bool:
        """key (u, h, s, k), cas (version, generation, count, MD5 of the head), new (version,
        count, head, now): True if applied (the CAS matched and every chunk went in)."""
        u, h, _s, _k = key
        sql = self.append_sql
        version, generation, count, token = cas
        args = (u, h, version, generation, count, *new, *columns_of(rows), token)
        got = await self.run(sql, lambda c: c.fetchrow(sql, *args))
        return bool(got is not None and got[0] == 1 and got[1] == len(rows))

    async def create(
        self,
        key: tuple[str, str, str, str],
        generation: int,
        head: str,
        now: datetime,
        rows: list[Chunk],
    ) -> bool:
        """True if the slot was created (False: it exists, nothing was written)."""
        u, h, s, k = key
        sql = self.create_sql
        count = rows[-1][0] if rows else 0
        args = (u, h, s, k, generation, count, head, now, *columns_of(rows))
        got = await self.run(sql, lambda c: c.fetchrow(sql, *args))
        return bool(got is not None and got[0] == 1 and got[1] == len(rows))

    async def probe(self, user_id: str, h: str, seq: int, head: str, now: datetime) -> Any:
        """(version, generation, count, body at seq, ours) of the slot, or None if absent;
        ours: its head and updated_at are exactly the ones the lost statement sent."""
        sql = self.probe_sql
        return await self.run(sql, lambda c: c.fetchrow(sql, user_id, h, seq, head, now))

    async def warm(self) -> None:
        """Run the load, append and probe once on a pooled connection, for no slot (the empty
        slot hash never addresses one; version -1 matches nothing): asyncpg caches the
        prepared statements, so a process's first call pays no parse/plan round trips."""

        async def run_all(c: asyncpg.Connection) -> None:
            await c.fetch(self.load_sql, "", "", 0, -1, -1)
            await c.fetchrow(self.cold_sql, "", "")
            none: Columns = ([], [], [])
            await c.fetchrow(self.append_sql, "", "", -1, 0, 0, 0, 0, "", None, *none, "")
            await c.fetchrow(self.probe_sql, "", "", 0, "", datetime(2000, 1, 1))

        await self.run("warm", run_all)


async def resolve(
    probe: Callable[[], Awaitable[Any]],
    *,
    before: int,
    after: tuple[int, int, int],
    first_body: str | None,
    cause: BaseException,
) -> bool:
    """After a lost connection: True if the slot holds exactly our write, False if it
    certainly never will (still at ``before`` and the server said it ended the session), else
    ``StoreUnavailable``.

    ``after`` is (version, generation, count) the statement would have left; ``first_body``
    the body of its first new row (None if it wrote no row). The probe's last column says the
    head and ``updated_at`` are the ones we sent: another writer's save that left the same
    (version, generation, count) is not ours. Still at ``before`` proves nothing by itself: a
    backend whose client went away may still be waiting for a row lock and commit later.
    """
    try:
        row = await probe()
    except StoreUnavailable:
        raise StoreUnavailable(
            "save: the connection was lost and the outcome is unknown"
        ) from cause
    if row is not None and row[0] == before and getattr(cause, SERVER_ENDED, False):
        return False
    if (
        row is not None
        and tuple(row[:3]) == after
        and (first_body is None or row[3] == first_body)
        and row[4]
    ):
        return True
    raise StoreUnavailable(
        "save: the connection was lost and the outcome is unknown (the slot does not hold "
        "this save, and its statement may still be applied)"
    ) from cause


def _marked(err: BaseException, *, not_sent: bool = False, ended: bool = False) -> BaseException:
    """``err`` carrying what is known about the statement's fate."""
    if not_sent:
        setattr(err, NOT_SENT, True)
    if ended:
        setattr(err, SERVER_ENDED, True)
    return err


def columns_of(chunks: Sequence[Chunk]) -> Columns:
    """(end_seqs, ns, bodies) of encoded chunks, the arrays the statements unnest."""
    return ([c[0] for c in chunks], [c[1] for c in chunks], [c[2] for c in chunks])
