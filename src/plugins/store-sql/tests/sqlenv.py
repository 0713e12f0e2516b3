"""Where the test databases are and how a test gets (and drops) tables of its own."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hookagent_store_sql import SQLAgentStateStore, TableNames
from sqlalchemy.ext.asyncio import create_async_engine

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
            for table in (names.messages, names.slots, names.fences, names.migrations):
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
