"""SQLite's direct path keeps one connection checked out in the file's thread
(``sqlite_batch.HeldConnection``): no pool check-out per load or save, no transaction left
open after an operation, a disposed engine's connection never reused, and the connection
given back when the store closes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore
from sqlalchemy import event

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _cycle(store: SQLAgentStateStore, text: str) -> None:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.context.append(Msg.user(text))
    await store.save_if_version("u", "s", got.state, got.version)


async def test_warm_loads_and_saves_check_out_no_pooled_connection(tmp_path: Path) -> None:
    store = SQLAgentStateStore(f"sqlite+aiosqlite:///{tmp_path}/h.db")
    checkouts: list[Any] = []
    try:
        state = AgentState("s", "u")
        state.context.append(Msg.user("a"))
        await store.save_if_version("u", "s", state, 0)
        await _cycle(store, "b")
        event.listen(store.data_engine, "checkout", lambda *a: checkouts.append(a))
        for i in range(5):
            await _cycle(store, f"c{i}")
        assert checkouts == []  # before: two per cycle (the load's and the save's)
        fresh = SQLAgentStateStore(str(store.engine.url))
        try:
            got = await fresh.get_versioned("u", "s")
            assert [m.text for m in got.state.context] == ["a", "b", *(f"c{i}" for i in range(5))]
        finally:
            await fresh.aclose()
    finally:
        await store.aclose()
    assert store._direct._batch.held._fairy is None  # given back on close


async def test_no_transaction_is_left_open_and_a_disposed_pool_is_not_reused(
    tmp_path: Path,
) -> None:
    store = SQLAgentStateStore(f"sqlite+aiosqlite:///{tmp_path}/h.db")
    try:
        state = AgentState("s", "u")
        state.context.append(Msg.user("a"))
        await store.save_if_version("u", "s", state, 0)
        direct = store._direct
        held = direct._batch.held

        def leave_open(conn: sqlite3.Connection) -> sqlite3.Connection:
            conn.execute("BEGIN")
            conn.execute("SELECT 1").fetchall()
            assert conn.in_transaction
            return conn

        first = await direct._call(leave_open)
        assert not first.in_transaction  # rolled back after the operation, as a check-in does
        engine = store.data_engine
        await store._runner.call(engine.dispose)  # a new pool: its connections are all new
        await _cycle(store, "b")
        second = held._fairy.driver_connection
        assert second is not first
        with pytest.raises(sqlite3.ProgrammingError):  # the old one was closed, not kept
            first.execute("SELECT 1")
        got = await store.get_versioned("u", "s")
        assert [m.text for m in got.state.context] == ["a", "b"]
    finally:
        await store.aclose()
