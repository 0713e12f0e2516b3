"""The kernel's conformance suite, inherited: every contract test runs against this store."""

from __future__ import annotations

import sqlite3

import pytest
from hookagent.store import encode_id
from hookagent.testing import StoreConformance
from hookagent.testing.conformance_hooks import split_document
from hookagent_example_store import ExampleSQLiteStore


class TestExampleSQLiteStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path):
        store = ExampleSQLiteStore(str(tmp_path / "agent.db"))  # fresh and empty per test
        yield store
        await store.aclose()

    async def open_handle(self, store):
        """A second instance on the same file: its own connection and message cache."""
        return ExampleSQLiteStore(store.path, cache_slots=store._cache.max_slots)

    async def plant_state(self, store, user_id, session_id, key, document, version):
        """Write the rows a save would, with a plain connection (another process)."""
        head, messages = split_document(document)
        slot = (encode_id(user_id), encode_id(session_id), encode_id(key))
        await store.exists(user_id, session_id, key)  # the tables exist
        with sqlite3.connect(store.path, isolation_level=None) as conn:
            conn.execute("DELETE FROM messages WHERE user_id=? AND session_id=? AND key=?", slot)
            conn.execute(
                "INSERT OR REPLACE INTO heads VALUES (?, ?, ?, ?, 'planted', ?, ?)",
                (*slot, version, len(messages), head),
            )
            conn.executemany(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?)",
                [(*slot, seq, body) for seq, body in enumerate(messages)],
            )


class TestExampleSQLiteStoreWithoutCache(TestExampleSQLiteStore):
    """The same contract when every load reads the whole history (cache_slots=0)."""

    @pytest.fixture
    async def store(self, tmp_path):
        store = ExampleSQLiteStore(str(tmp_path / "agent.db"), cache_slots=0)
        yield store
        await store.aclose()
