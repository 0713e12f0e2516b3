"""The kernel's conformance suite on each dialect (fresh tables for every test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hookagent.testing import StoreConformance
from hookagent_store_sql import SQLAgentStateStore
from sqlalchemy.ext.asyncio import create_async_engine
from sqlenv import fresh_store, unique_name


class TestPostgreSQL(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        # a schema of its own per test: exercises the schema option too
        async with fresh_store("postgresql", tmp_path, schema=unique_name("s").rstrip("_")) as s:
            yield s


class TestMariaDB(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        async with fresh_store("mariadb", tmp_path) as s:
            yield s


class TestSQLite(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        async with fresh_store("sqlite", tmp_path) as s:
            yield s


class TestSQLiteGivenAsyncEngine(StoreConformance):
    """A caller's own aiosqlite engine: the store runs through AsyncConnection.run_sync."""

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
        engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'given.db'}")
        s = SQLAgentStateStore(engine, table_prefix="given_")
        yield s
        await s.aclose()
        await engine.dispose()
