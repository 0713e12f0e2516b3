"""The kernel's conformance suite on each dialect (a fresh, empty store for every test;
PostgreSQL's and MariaDB's tables are made once per class and emptied before each test,
``classtables``), with both optional hooks: a second handle (new instance, engine and cache on
the same tables) and raw rows planted behind the store's back, so no check is "not run"."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from classtables import ClassTables, class_tables
from hookagent.store import AgentStateStore
from hookagent.testing import StoreConformance
from hookagent_store_sql import SQLAgentStateStore
from sqlalchemy.ext.asyncio import create_async_engine
from sqlenv import another_handle, fresh_store, plant_document


class SQLConformance(StoreConformance):
    given_engine = False

    async def open_handle(self, store: AgentStateStore) -> AgentStateStore:
        assert isinstance(store, SQLAgentStateStore)
        return another_handle(store, given_engine=self.given_engine)

    async def plant_state(
        self,
        store: AgentStateStore,
        user_id: str,
        session_id: str,
        key: str,
        document: bytes,
        version: int,
    ) -> None:
        assert isinstance(store, SQLAgentStateStore)
        await plant_document(store, user_id, session_id, key, document, version)


class ServerConformance(SQLConformance):
    """PostgreSQL and MariaDB: one set of tables per class, emptied before each test."""

    dialect = ""
    schema = False

    @pytest.fixture(scope="class")
    @classmethod
    def tables(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassTables]:
        with class_tables(
            cls.dialect,
            tmp_path_factory.mktemp("store"),
            lambda url, n: SQLAgentStateStore(url, table_prefix=n.prefix, schema=n.schema),
            schema=cls.schema,
        ) as tables:
            yield tables

    @pytest.fixture
    async def store(self, tables: ClassTables) -> AsyncIterator[SQLAgentStateStore]:
        n = tables.names
        s = SQLAgentStateStore(tables.url, table_prefix=n.prefix, schema=n.schema)
        try:
            await tables.empty(s.engine)
            yield s
        finally:
            await s.aclose()


class TestPostgreSQL(ServerConformance):
    dialect = "postgresql"
    schema = True  # a schema of its own: exercises the schema option too


class TestMariaDB(ServerConformance):
    dialect = "mariadb"


class TestSQLite(SQLConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        async with fresh_store("sqlite", tmp_path) as s:
            yield s


class TestSQLiteGivenAsyncEngine(SQLConformance):
    """A caller's own aiosqlite engine: the store runs through AsyncConnection.run_sync."""

    given_engine = True

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'given.db'}")
        s = SQLAgentStateStore(engine, table_prefix="given_")
        yield s
        await s.aclose()
        await engine.dispose()
