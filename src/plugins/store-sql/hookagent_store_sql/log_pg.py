"""The session log's one-statement path on PostgreSQL sent by asyncpg itself (``pg_direct``'s
plumbing: one greenlet hop, a connection of the engine's own pool, asyncpg's prepared
statement cache), instead of through SQLAlchemy's ``run_sync`` and ``Connection.execute``.

Why: the statements are ``log_fast``'s, byte for byte (their ``:name`` parameters numbered
``$n`` in order of first appearance), so the exactness argument there is unchanged; what
goes is SQLAlchemy's client CPU per statement (the compiled cache lookup, parameter
processing, the result's row objects, the connection and transaction wrappers), paid 5
times a W1 call. The answers are ``log_fast.run``'s: the row, or ``None`` when nothing was
changed, a unique key met a planted row, the database rolled the statement back by itself,
or the connection was lost (the locked transaction then finds a commit that did land and
answers the duplicate). Other errors are raised as ``translate`` types them.
"""

from __future__ import annotations

import re
from typing import Any

from hookagent.sessionlog import LogHead
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import TextClause

from .errors import is_disconnect, is_retryable, translate
from .log_fast import FastStatements
from .log_schema import read_at_param, read_at_sql, read_range_pg_sql
from .pg_direct import PgDirect

_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def numbered(stmt: TextClause) -> tuple[str, tuple[str, ...]]:
    """The statement's SQL with ``$n`` for its ``:name`` parameters, and the names in order."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return _PARAM.sub(number, stmt.text), tuple(names)


def head_of_record(row: Any) -> LogHead:
    seq, epoch, owner, lease, commit_id, checkpoint = row[:6]
    return LogHead(int(seq), int(epoch), owner, float(lease), commit_id, int(checkpoint))


class PgLogDirect(PgDirect):
    """Only ``PgDirect.run`` (its connection handling) is used: no state-store table."""

    def __init__(self, engine: AsyncEngine, fast: FastStatements) -> None:  # no super()
        self._pool_engine = engine.sync_engine
        self.acquire = numbered(fast.acquire)
        self.commit = {finish: numbered(stmt) for finish, stmt in fast.commit.items()}
        self.read_sql = read_range_pg_sql(fast.heads, fast.commits)
        self.read_at_sql = read_at_sql(fast.heads, fast.commits)

    async def read(self, u: str, s: str, after: int, one: bool = False) -> list[Any]:
        """The rows of ``LogQueries.read(None)`` (``one``: ``read(1)``), (head, first, last,
        data), in statements that seek on the primary key on any statistics (errors as
        SQLAlchemy's)."""
        if one:
            return [(r[0], r[2], r[3], r[4]) for r in await self.read_at(u, s, [after])]
        sql = self.read_sql
        return await self.run(sql, lambda c: c.fetch(sql, u, s, after))

    async def read_at(self, u: str, s: str, afters: list[int]) -> list[Any]:
        """The rows of ``read_at_sql``: (head, i, first, last, data) per seq, in order."""
        sql, seqs = self.read_at_sql, read_at_param(afters)
        return await self.run(sql, lambda c: c.fetch(sql, u, s, seqs))

    async def fetch_head(
        self, what: str, sql: tuple[str, tuple[str, ...]], params: dict[str, Any]
    ) -> LogHead | None:
        text, names = sql
        args = [params[n] for n in names]
        try:
            row = await self.run(text, lambda c: c.fetchrow(text, *args))
        except sa_exc.DBAPIError as exc:
            if isinstance(exc, sa_exc.IntegrityError) or is_retryable(exc) or is_disconnect(exc):
                return None
            raise translate(exc, what) from exc
        return None if row is None else head_of_record(row)
