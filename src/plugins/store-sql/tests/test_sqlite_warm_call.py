"""SQLite's warm call: the load checks the slot on the event loop's thread (``sqlite_check``),
so a warm call is one statement there and one hop into the file's thread (the save's group
commit); whatever the check cannot confirm (another writer's version, a head changed behind
the store's back, an error on its connection) goes to the file's thread as before. The
direct path's timestamps are SQLAlchemy's text, written without ``strftime``."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hookagent.codec import encode_head
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore, slot_hash
from hookagent_store_sql.sqlite_direct import SqliteDirect, timestamp
from sqlalchemy import update
from sqlalchemy.dialects import sqlite

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Counted:
    """The statements the file's thread runs (on its held connection) and its hops."""

    def __init__(self, store: SQLAgentStateStore) -> None:
        self.statements: list[str] = []
        self.hops = 0
        runner: Any = store._runner
        call, submit = runner.call, runner.submit

        async def counted_call(*args: Any) -> Any:
            self.hops += 1
            return await call(*args)

        def counted_submit(fn: Any) -> None:
            self.hops += 1
            submit(fn)

        runner.call, runner.submit = counted_call, counted_submit
        direct = store._direct
        assert isinstance(direct, SqliteDirect)
        self.check = direct.check
        conn = direct._batch.held._fairy.driver_connection
        conn.set_trace_callback(self.statements.append)

    def reset(self) -> None:
        self.statements.clear()
        self.hops = 0
        self.check.statements = 0


async def _seeded(tmp_path: Path) -> SQLAgentStateStore:
    store = SQLAgentStateStore(f"sqlite+aiosqlite:///{tmp_path}/c.db")
    state = AgentState("s", "u")
    state.context.extend([Msg.user("a"), Msg.user("b")])
    await store.save_if_version("u", "s", state, 0)
    await _cycle(store, "c")  # loaded once in the thread: cached, the check's connection open
    return store


async def _cycle(store: SQLAgentStateStore, text: str) -> int:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.context.append(Msg.user(text))
    return await store.save_if_version("u", "s", got.state, got.version)


async def _texts(store: SQLAgentStateStore) -> list[str]:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    return [m.text for m in got.state.context]


async def test_a_warm_call_is_one_statement_on_the_loop_and_one_hop(tmp_path: Path) -> None:
    store = await _seeded(tmp_path)
    try:
        counted = Counted(store)
        for i in range(3):
            counted.reset()
            await _cycle(store, f"d{i}")
            assert counted.check.statements == 1  # the version check, on the loop's thread
            assert counted.hops == 1  # the save's group commit; before: 2 (the load's too)
            verbs = [s.split()[0] for s in counted.statements]
            assert verbs == ["BEGIN", "UPDATE", "INSERT", "COMMIT"]
        fresh = SQLAgentStateStore(str(store.engine.url))
        try:
            assert await _texts(fresh) == ["a", "b", "c", "d0", "d1", "d2"]
        finally:
            await fresh.aclose()
    finally:
        await store.aclose()
    assert store._direct.check._conn is None  # closed with the store


async def test_another_writers_version_is_read_in_the_thread(tmp_path: Path) -> None:
    store = await _seeded(tmp_path)
    other = SQLAgentStateStore(str(store.engine.url))
    try:
        version = await _cycle(other, "theirs")
        counted = Counted(store)
        got = await store.get_versioned("u", "s")
        assert got.version == version
        assert [m.text for m in got.state.context] == ["a", "b", "c", "theirs"]
        assert counted.check.statements == 1 and counted.hops == 1  # checked, then read
        assert [s.split()[0] for s in counted.statements] == ["SELECT"]
    finally:
        await other.aclose()
        await store.aclose()


async def test_a_head_changed_behind_the_stores_back_is_read_not_the_cached_one(
    tmp_path: Path,
) -> None:
    store = await _seeded(tmp_path)
    try:
        planted = AgentState("s", "u", summary="planted")
        slots = store.tables.slots
        async with store.engine.begin() as conn:  # same version, generation and count
            await conn.execute(
                update(slots)
                .where(slots.c.user_id == "u", slots.c.slot_hash == slot_hash("s", "agent_state"))
                .values(head=encode_head(planted).decode())
            )
        got = await store.get_versioned("u", "s")
        assert got.state is not None and got.state.summary == "planted"
        assert [m.text for m in got.state.context] == ["a", "b", "c"]
    finally:
        await store.aclose()


async def test_a_disposed_engine_reopens_the_loops_connection(tmp_path: Path) -> None:
    store = await _seeded(tmp_path)
    try:
        direct = store._direct
        assert isinstance(direct, SqliteDirect)
        before = direct.check._conn
        await store._runner.call(store.data_engine.dispose)  # type: ignore[union-attr]
        counted = Counted(store)
        assert await _texts(store) == ["a", "b", "c"]  # read in the thread, as after a dispose
        assert counted.hops == 1 and counted.check.statements == 0
        assert direct.check._conn is not None and direct.check._conn is not before
        with pytest.raises(sqlite3.ProgrammingError):  # the old one was closed, not kept
            before.execute("SELECT 1")  # type: ignore[union-attr]
        counted.reset()
        assert await _texts(store) == ["a", "b", "c"]
        assert counted.hops == 0 and counted.check.statements == 1
    finally:
        await store.aclose()


class Failing:
    """A connection whose every statement fails as SQLite would."""

    def __init__(self, message: str, code: int) -> None:
        self.message, self.code, self.closed = message, code, False

    def execute(self, *_: Any) -> Any:
        exc = sqlite3.OperationalError(self.message)
        exc.sqlite_errorcode = self.code  # type: ignore[attr-defined]
        raise exc

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("message", "code", "kept"), [("database is locked", 5, True), ("disk I/O error", 10, False)]
)
async def test_an_error_on_the_loop_leaves_the_load_to_the_thread(
    tmp_path: Path, message: str, code: int, kept: bool
) -> None:
    store = await _seeded(tmp_path)
    try:
        direct = store._direct
        assert isinstance(direct, SqliteDirect)
        real = direct.check._conn
        failing = Failing(message, code)
        direct.check._conn = failing  # type: ignore[assignment]
        counted = Counted(store)
        assert await _texts(store) == ["a", "b", "c"]
        assert counted.hops == 1 and [s.split()[0] for s in counted.statements] == ["SELECT"]
        # busy: the connection is kept (the thread retried the read); anything else: closed,
        # and a new one opened in the thread by that read
        assert (direct.check._conn is failing) is kept
        assert failing.closed is not kept
        if not kept:
            assert direct.check._conn is not None
            counted.reset()
            assert await _texts(store) == ["a", "b", "c"]
            assert counted.hops == 0 and counted.check.statements == 1
        assert real is not None
        real.close()
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 12, 3, 7, 1, 2),  # no microseconds: still written, as SQLAlchemy does
        datetime(2026, 1, 2, 3, 4, 5, 6),
        datetime(999, 1, 1, 0, 0, 0, 999999),  # a 4-digit year, as SQLAlchemy pads it
        datetime(2026, 6, 1, 12, 0, 0, 5, tzinfo=UTC),
        datetime(2026, 6, 1, 12, 0, 0, 5, tzinfo=timezone(timedelta(hours=2))),
    ],
)
async def test_timestamps_are_sqlalchemys_text(value: datetime) -> None:
    stored = sqlite.DATETIME().bind_processor(sqlite.dialect())
    assert stored is not None
    assert timestamp(value) == stored(value)
