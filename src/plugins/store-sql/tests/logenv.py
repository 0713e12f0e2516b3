"""Session logs on tables of their own for the tests, and rows planted behind their back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hookagent.sessionlog import LogEvent
from hookagent.sessionlog.rules import encode_commit
from hookagent_store_sql import SqlSessionLog, TableNames
from hookagent_store_sql.log_schema import id_hash
from sqlalchemy import insert, select, update
from sqlenv import drop_tables, unique_name, url_for


@asynccontextmanager
async def fresh_log(dialect: str, tmp_path: Path, **kw: Any) -> AsyncIterator[SqlSessionLog]:
    """A log on tables nobody else uses (PostgreSQL: a schema of its own); dropped after."""
    url = url_for(dialect, tmp_path)
    schema = unique_name("s").rstrip("_") if dialect == "postgresql" else None
    names = TableNames(kw.pop("table_prefix", unique_name()), kw.pop("schema", schema))
    log = SqlSessionLog(url, table_prefix=names.prefix, schema=names.schema, **kw)
    try:
        yield await log.open()
    finally:
        await log.aclose()
        await drop_tables(url, names)


def another_handle(log: SqlSessionLog, **kw: Any) -> SqlSessionLog:
    """A new instance on a new engine over the same tables (what another process has)."""
    url = log.engine.url.render_as_string(hide_password=False)
    names = log.tables.names
    return SqlSessionLog(url, table_prefix=names.prefix, schema=names.schema, **kw)


async def _head_row(log: SqlSessionLog, conn: Any, user_id: str, session_id: str) -> Any:
    h = log.tables.heads
    where = (h.c.user_id == user_id, h.c.session_id == session_id)
    row = (await conn.execute(select(h.c.seq).where(*where))).first()
    if row is None:
        values = dict(seq=0, epoch=0, owner=None, lease_until=0.0, commit_id=None)
        await conn.execute(
            insert(h).values(
                user_id=user_id, session_id=session_id, checkpoint_seq=0, rev=1, **values
            )
        )
        return 0
    return int(row.seq)


async def plant_orphan(
    log: SqlSessionLog, user_id: str, session_id: str, batch_id: str, events: Sequence[LogEvent]
) -> None:
    """A commit row at ``head.seq + 1`` whose head never moved (raw SQL)."""
    await log.open()
    data, digest = encode_commit(events)
    c = log.tables.commits
    async with log.engine.begin() as conn:
        first = await _head_row(log, conn, user_id, session_id) + 1
        await conn.execute(
            insert(c).values(
                user_id=user_id,
                session_id=session_id,
                first_seq=first,
                last_seq=first + len(events) - 1,
                batch_hash=id_hash(batch_id),
                batch_id=batch_id,
                digest=digest,
                data=data,
            )
        )


async def plant_head(log: SqlSessionLog, user_id: str, session_id: str, seq: int) -> None:
    """Move the head to ``seq`` without a commit (raw SQL)."""
    await log.open()
    h = log.tables.heads
    async with log.engine.begin() as conn:
        await _head_row(log, conn, user_id, session_id)
        where = (h.c.user_id == user_id, h.c.session_id == session_id)
        await conn.execute(update(h).where(*where).values(seq=seq, rev=h.c.rev + 1))
