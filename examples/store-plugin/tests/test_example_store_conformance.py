"""The kernel's conformance suite, inherited: every contract test runs against this store."""

from __future__ import annotations

import pytest
from hookagent.testing import StoreConformance
from hookagent_example_store import ExampleSQLiteStore


class TestExampleSQLiteStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path):
        store = ExampleSQLiteStore(str(tmp_path / "agent.db"))  # fresh and empty per test
        yield store
        await store.aclose()


class TestExampleSQLiteStoreWithoutCache(StoreConformance):
    """The same contract when every load reads the whole history (cache_slots=0)."""

    @pytest.fixture
    async def store(self, tmp_path):
        store = ExampleSQLiteStore(str(tmp_path / "agent.db"), cache_slots=0)
        yield store
        await store.aclose()
