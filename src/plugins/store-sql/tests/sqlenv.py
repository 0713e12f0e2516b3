"""Where the test databases are and how a test gets (and drops) tables of its own."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from hookagent.testing.conformance_hooks import split_document
from hookagent_store_sql import SQLAgentStateStore, TableNames, slot_hash
from hookagent_store_sql.migrations import utcnow
from hookagent_store_sql.save import new_generation
from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

PG_URL = os.environ.get(
    "HOOKAGENT_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
MARIADB_URL = os.environ.get(
    "HOOKAGENT_TEST_MYSQL_URL", "mariadb+aiomysql://root@127.0.0.1:3306/test"
)
DIALECTS = ("postgresql", "mariadb", "sqlite")


def unique_name(tag: str = "t") -> str:
    return f"{tag}{uuid.uuid4().hex[:12]}_"


def url_for(dialect: str, tmp_path: Path) -> str:
    if dialect == "postgresql":
        return PG_URL
    if dialect == "mariadb":
        return MARIADB_URL
    return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"


async def drop_tables(url: str, names: TableNames) -> None:
    """Remove everything a test created: its PostgreSQL schema, or its prefixed tables."""
    if url.startswith("sqlite"):
        return  # the file lives in the test's tmp dir
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            prep = conn.dialect.identifier_preparer
            if names.schema is not None and url.startswith("postgresql"):
                await conn.exec_driver_sql(
                    f"DROP SCHEMA IF EXISTS {prep.quote_schema(names.schema)} CASCADE"
                )
                return
            if names.schema is not None:
                await conn.exec_driver_sql(
                    f"DROP DATABASE IF EXISTS {prep.quote_schema(names.schema)}"
                )
                return
            await conn.exec_driver_sql(f"DROP VIEW IF EXISTS {prep.quote(names.message_rows)}")
            log = (names.log_commits, names.log_seals, names.log_heads)
            for table in (
                names.chunks,
                names.messages,
                names.slots,
                names.fences,
                *log,
                names.migrations,
            ):
                await conn.exec_driver_sql(f"DROP TABLE IF EXISTS {prep.quote(table)}")
    finally:
        await engine.dispose()


@asynccontextmanager
async def fresh_store(dialect: str, tmp_path: Path, **kw: Any) -> AsyncIterator[SQLAgentStateStore]:
    """A store on tables nobody else uses; dropped afterwards."""
    url = url_for(dialect, tmp_path)
    names = TableNames(kw.pop("table_prefix", unique_name()), kw.pop("schema", None))
    store = SQLAgentStateStore(url, table_prefix=names.prefix, schema=names.schema, **kw)
    try:
        yield store
    finally:
        await store.aclose()
        await drop_tables(url, names)


class OwnEngineStore(SQLAgentStateStore):
    """A store on an engine given to it that is its own all the same: closing it disposes
    the engine (a second handle of the given-engine configuration, in its own pool)."""

    async def aclose(self) -> None:
        await super().aclose()
        await self.engine.dispose()


def another_handle(store: SQLAgentStateStore, *, given_engine: bool = False) -> SQLAgentStateStore:
    """A second handle on ``store``'s tables as another process would have it: a new
    instance, a new engine (so new connections) and an empty cache. ``given_engine``: built
    on an engine of its own (the caller's-engine path) rather than from the URL."""
    url = store.engine.url.render_as_string(hide_password=False)
    names = store.tables.names
    if given_engine:
        engine: AsyncEngine = create_async_engine(url)
        return OwnEngineStore(engine, table_prefix=names.prefix, schema=names.schema)
    return SQLAgentStateStore(url, table_prefix=names.prefix, schema=names.schema)


async def plant_document(
    store: SQLAgentStateStore, user: str, session: str, key: str, document: bytes, version: int
) -> None:
    """Write a whole state document (``to_json()``'s form) as the slot's rows at ``version``,
    in the store's raw layout and behind its back (replacing what the slot held), as rows
    copied from another slot or written by a newer hookagent would be."""
    await store.open()  # the tables exist (migrated) before the first raw write
    head, messages = split_document(document)
    t, h, now = store.tables, slot_hash(session, key), utcnow()
    addr = {"user_id": user, "slot_hash": h}
    rows = []
    for seq, body in enumerate(messages):
        msg = orjson.loads(body)
        rows.append(
            {
                **addr,
                "seq": seq,
                "session_id": session,
                "state_key": key,
                "role": str(msg.get("role", "")),
                "msg_id": str(msg.get("id", "")),
                "body": body.decode(),
            }
        )
    async with store.engine.begin() as conn:
        for table in (t.messages, t.chunks, t.slots):
            await conn.execute(delete(table).where(table.c.user_id == user, table.c.slot_hash == h))
        await conn.execute(
            insert(t.slots).values(
                **addr,
                session_id=session,
                state_key=key,
                version=version,
                generation=new_generation(),
                message_count=len(rows),
                head=head.decode(),
                created_at=now,
                updated_at=now,
            )
        )
        if rows:
            await conn.execute(insert(t.messages), rows)


def crash_store(url: str, prefix: str, path: str) -> SQLAgentStateStore:
    """The crash harness's factory (``kill_mid_save("sqlenv:crash_store", ...)``): a store
    on ``url``'s ``prefix`` tables, on the direct path or (``path="sqlalchemy"``) not."""
    return SQLAgentStateStore(url, table_prefix=prefix, direct_path=path == "direct")
