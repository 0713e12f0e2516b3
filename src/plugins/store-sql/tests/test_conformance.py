"""The kernel's conformance suite on each dialect (fresh tables for every test), with both
optional hooks: a second handle (new instance, engine and cache on the same tables) and raw
rows planted behind the store's back, so no check is "not run"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hookagent.store import AgentStateStore
from hookagent.testing import StoreConformance
from hookagent_store_sql import SQLAgentStateStore
from sqlalchemy.ext.asyncio import create_async_engine
from sqlenv import another_handle, fresh_store, plant_document, unique_name


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


class TestPostgreSQL(SQLConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        # a schema of its own per test: exercises the schema option too
        async with fresh_store("postgresql", tmp_path, schema=unique_name("s").rstrip("_")) as s:
            yield s


class TestMariaDB(SQLConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        async with fresh_store("mariadb", tmp_path) as s:
            yield s


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
