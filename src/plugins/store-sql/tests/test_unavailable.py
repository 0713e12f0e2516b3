"""Driver failures surface as typed errors with the cause chained; SQLite busy is waited out."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path

import asyncpg
import pytest
from hookagent.errors import StoreUnavailable
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore, TableNames
from sqlenv import PG_URL, drop_tables, fresh_store, unique_name, url_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://postgres@127.0.0.1:1/test",
        "mariadb+aiomysql://root@127.0.0.1:1/test",
    ],
)
async def test_connection_refused_is_store_unavailable(url: str) -> None:
    store = SQLAgentStateStore(url, table_prefix="never_")
    try:
        for call in (
            store.get_versioned("u", "s"),
            store.save_if_version("u", "s", AgentState("s", "u"), 0),
            store.list_session_ids("u"),
        ):
            with pytest.raises(StoreUnavailable) as info:
                await call
            assert info.value.__cause__ is not None
            if "list" not in call.__qualname__:  # a load or a save names its slot
                assert "user_id='u' session_id='s' key='agent_state'" in str(info.value)
    finally:
        await store.aclose()


async def test_pool_timeout_is_store_unavailable(tmp_path: Path) -> None:
    async with fresh_store(
        "postgresql", tmp_path, pool_size=1, max_overflow=0, pool_timeout=0.2
    ) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        held = await store.engine.connect()
        try:
            with pytest.raises(StoreUnavailable, match="unavailable") as info:
                await store.get_versioned("u", "s")
            assert info.value.__cause__ is not None
            with pytest.raises(StoreUnavailable):
                await store.save_if_version("u", "s", AgentState("s", "u"), 1)
        finally:
            await held.close()
        assert (await store.get_versioned("u", "s")).version == 1


@pytest.mark.parametrize("dialect", ["postgresql", "mariadb"])
async def test_killed_idle_connections_are_replaced(dialect: str, tmp_path: Path) -> None:
    """A server restart or idle kill: the next read and write reconnect instead of failing."""
    app = f"hookagent-idle-{uuid.uuid4().hex[:8]}"
    args = {"server_settings": {"application_name": app}} if dialect == "postgresql" else {}
    names = TableNames(unique_name())
    url = url_for(dialect, tmp_path)
    store = SQLAgentStateStore(url, table_prefix=names.prefix, connect_args=args)
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        await store.get_versioned("u", "s")
        if dialect == "postgresql":
            conn = await asyncpg.connect(PG_URL.replace("postgresql+asyncpg", "postgresql"))
            killed = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                app,
            )
            await conn.close()
        else:
            async with store.engine.connect() as own:  # the pooled connection the store uses
                pid = (await own.exec_driver_sql("SELECT CONNECTION_ID()")).scalar()
            import aiomysql

            conn = await aiomysql.connect(host="127.0.0.1", port=3306, user="root", db="test")
            async with conn.cursor() as cur:
                await cur.execute("KILL %s", (pid,))
            conn.close()
            killed = 1
        assert killed >= 1
        assert (await store.get_versioned("u", "s")).version == 1
        assert await store.save_if_version("u", "s", AgentState("s", "u", "after"), 1) == 2
    finally:
        await store.aclose()
        await drop_tables(url, names)


async def test_sqlite_busy_is_retried_until_the_writer_lets_go(tmp_path: Path) -> None:
    async with fresh_store("sqlite", tmp_path, sqlite_busy_timeout=0.05) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        try:
            task = asyncio.create_task(
                store.save_if_version("u", "s", AgentState("s", "u", "x"), 1)
            )
            await asyncio.sleep(0.4)
            assert not task.done()
            other.execute("COMMIT")
            assert await asyncio.wait_for(task, 10) == 2
        finally:
            other.close()


async def test_sqlite_busy_past_the_deadline_is_store_unavailable(tmp_path: Path) -> None:
    async with fresh_store(
        "sqlite", tmp_path, sqlite_busy_timeout=0.05, retry_deadline=0.3
    ) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreUnavailable, match="busy"):
                await store.save_if_version("u", "s", AgentState("s", "u", "x"), 1)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert (await store.get_versioned("u", "s")).version == 1  # nothing half-written
        assert await store.save_if_version("u", "s", AgentState("s", "u", "x"), 1) == 2


async def test_sqlite_one_writer_lock_per_file(tmp_path: Path) -> None:
    """Two store instances on one file in one process share a writer lock: no busy at all."""
    url = url_for("sqlite", tmp_path)
    # no busy timeout and no retries: any contention between them would fail a write
    opts = {"table_prefix": "w_", "retry_deadline": 0.0, "sqlite_busy_timeout": 0.0}
    a, b = SQLAgentStateStore(url, **opts), SQLAgentStateStore(url, **opts)
    try:
        await a.save_if_version("u", "s0", AgentState("s0", "u"), 0)
        assert not await b.exists("u", "s1")  # both ready (tables checked) before the race

        async def write(store, i: int) -> int:
            return await store.save_if_version("u", f"s{i}", AgentState(f"s{i}", "u"), 0)

        results = await asyncio.gather(*(write(a if i % 2 else b, i) for i in range(1, 41)))
        assert results == [1] * 40
    finally:
        await a.aclose()
        await b.aclose()


@pytest.mark.parametrize("applied", [True, False])
async def test_pg_one_statement_append_resolves_a_lost_connection(
    applied: bool, tmp_path: Path, monkeypatch
) -> None:
    """The append statement autocommits: after a lost connection the store reads back whether
    our write is there (then reports success); a slot still at the old version proves nothing
    (the statement may yet run), so that is StoreUnavailable, and the slot is left alone."""
    from hookagent.messages import Msg
    from hookagent_store_sql.pg_direct import PgDirect
    from sqlalchemy.exc import OperationalError

    real = PgDirect.append

    async def lossy(self, *args):
        if applied:
            await real(self, *args)
        raise OperationalError(
            "WITH upd ...", {}, ConnectionResetError("reset"), connection_invalidated=True
        )

    async with fresh_store("postgresql", tmp_path) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        got = await store.get_versioned("u", "s")
        got.state.context.append(Msg.user("once"))
        monkeypatch.setattr(PgDirect, "append", lossy)
        if applied:
            assert await store.save_if_version("u", "s", got.state, 1) == 2
        else:
            with pytest.raises(StoreUnavailable, match="unknown"):
                await store.save_if_version("u", "s", got.state, 1)
        monkeypatch.setattr(PgDirect, "append", real)
        other = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
        final = await other.get_versioned("u", "s")
        if applied:
            assert final.version == 2 and [m.text for m in final.state.context] == ["once"]
        else:
            assert final.version == 1 and final.state.context == []


@pytest.mark.parametrize("applied", [True, False])
async def test_pg_one_statement_create_resolves_a_lost_connection(
    applied: bool, tmp_path: Path, monkeypatch
) -> None:
    """A create whose connection was lost: success if the slot is ours (its random
    generation), else StoreUnavailable; an absent slot is not proof that nothing ran."""
    from hookagent.messages import Msg
    from hookagent_store_sql.pg_direct import PgDirect
    from sqlalchemy.exc import OperationalError

    real = PgDirect.create

    async def lossy(self, *args):
        if applied:
            await real(self, *args)
        raise OperationalError(
            "WITH new_slot ...", {}, ConnectionResetError("reset"), connection_invalidated=True
        )

    async with fresh_store("postgresql", tmp_path) as store:
        state = AgentState("s", "u")
        state.context.append(Msg.user("first"))
        monkeypatch.setattr(PgDirect, "create", lossy)
        if applied:
            assert await store.save_if_version("u", "s", state, 0) == 1
        else:
            with pytest.raises(StoreUnavailable, match="unknown"):
                await store.save_if_version("u", "s", state, 0)
        monkeypatch.setattr(PgDirect, "create", real)
        other = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
        final = await other.get_versioned("u", "s")
        if applied:
            assert final.version == 1 and [m.text for m in final.state.context] == ["first"]
        else:
            assert final.version == 0 and final.state is None


async def test_pg_direct_statement_cancelled_mid_flight_drops_its_connection(
    tmp_path: Path,
) -> None:
    """A caller's timeout cancels a direct statement: the store drops that connection (as
    SQLAlchemy does) and the next operations, on the pool's only slot, work."""
    async with fresh_store("postgresql", tmp_path, pool_size=1, max_overflow=0) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        direct = store._direct
        assert direct is not None
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(
                direct.run("sleep", lambda c: c.fetch("SELECT pg_sleep(2)")), 0.2
            )
        got = await store.get_versioned("u", "s")
        assert got.version == 1
        assert await store.save_if_version("u", "s", got.state, 1) == 2
