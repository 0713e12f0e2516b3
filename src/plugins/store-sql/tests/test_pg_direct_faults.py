"""PostgreSQL's direct path under connection faults: a pool of dead connections, a lost
connection whose statement may still run, another writer's save that looks like ours."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hookagent.errors import StoreUnavailable
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore, TableNames
from hookagent_store_sql.pg_direct import PgDirect, wrap
from sqlalchemy.exc import OperationalError
from sqlenv import PG_URL, drop_tables, fresh_store, unique_name

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _dsn() -> str:
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://")


async def _terminate(app: str) -> int:
    conn = await asyncpg.connect(_dsn())
    try:
        return int(
            await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = $1",
                app,
            )
        )
    finally:
        await conn.close()


async def test_a_pool_of_terminated_connections_is_replaced(tmp_path: Path) -> None:
    """Every pooled connection killed (a restart): the first dead one invalidates the pool,
    as SQLAlchemy does, so loads and a save go through instead of landing on dead ones (more
    of them than the direct path's check-out attempts)."""
    app = f"hookagent-stale-{uuid.uuid4().hex[:8]}"
    args = {"server_settings": {"application_name": app}}
    n = 8
    async with fresh_store("postgresql", tmp_path, pool_size=n, connect_args=args) as store:
        for i in range(n):
            await store.save_if_version("u", f"s{i}", AgentState(f"s{i}", "u"), 0)

        async def fill_pool() -> None:
            for _ in range(2):
                await asyncio.gather(*(store.get_versioned("u", f"s{i}") for i in range(n)))

        await fill_pool()
        assert await _terminate(app) > 3
        await asyncio.sleep(0.2)  # asyncpg sees the sockets close
        for i in range(3):
            assert (await store.get_versioned("u", f"s{i}")).version == 1
        await fill_pool()
        got = await store.get_versioned("u", "s0")
        assert await _terminate(app) > 3
        await asyncio.sleep(0.2)
        got.state.context.append(Msg.user("x"))
        assert await store.save_if_version("u", "s0", got.state, 1) == 2
        assert (await store.get_versioned("u", "s0")).version == 2


async def test_another_writers_save_at_the_same_version_is_not_ours(tmp_path: Path, monkeypatch):
    """A head-only save whose connection was lost: another instance's head-only save left the
    same (version, generation, count); the read-back must not acknowledge ours."""
    async with fresh_store("postgresql", tmp_path) as a:
        b = SQLAgentStateStore(a.engine, table_prefix=a.tables.names.prefix)
        state = AgentState("s", "u")
        state.context.append(Msg.user("hi"))
        await a.save_if_version("u", "s", state, 0)
        ga, gb = await a.get_versioned("u", "s"), await b.get_versioned("u", "s")
        gb.state.summary = "B"
        assert await b.save_if_version("u", "s", gb.state, 1) == 2

        async def lost(self: PgDirect, *args: Any) -> bool:
            raise OperationalError(
                "WITH upd", {}, ConnectionResetError("reset"), connection_invalidated=True
            )

        monkeypatch.setattr(PgDirect, "append", lost)
        ga.state.summary = "A"
        with pytest.raises(StoreUnavailable, match="unknown"):
            await a.save_if_version("u", "s", ga.state, 1)
        monkeypatch.undo()
        final = await SQLAgentStateStore(
            a.engine, table_prefix=a.tables.names.prefix
        ).get_versioned("u", "s")
        assert final.version == 2 and final.state.summary == "B"


async def test_a_save_whose_backend_the_server_ended_is_retried(tmp_path: Path, monkeypatch):
    """57P01 (the server ended the session): the backend exits, its statement can no longer
    commit, so a slot still at the old version means 'not applied': the transaction path runs."""

    async def ended(self: PgDirect, *args: Any) -> bool:
        async def boom(conn: asyncpg.Connection) -> None:
            raise asyncpg.exceptions.AdminShutdownError("terminating connection")

        await self.run("WITH upd", boom)
        return True

    async with fresh_store("postgresql", tmp_path) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        got = await store.get_versioned("u", "s")
        got.state.context.append(Msg.user("once"))
        monkeypatch.setattr(PgDirect, "append", ended)
        assert await store.save_if_version("u", "s", got.state, 1) == 2
        monkeypatch.undo()
        final = await SQLAgentStateStore(
            store.engine, table_prefix=store.tables.names.prefix
        ).get_versioned("u", "s")
        assert final.version == 2 and [m.text for m in final.state.context] == ["once"]


async def test_a_cancelled_statement_is_a_plain_failure(tmp_path: Path, monkeypatch) -> None:
    """57014 (statement timeout, pg_cancel_backend) rolled the statement back on a live
    connection: not a disconnect, so no read-back and the connection stays pooled."""
    err = wrap(asyncpg.exceptions.QueryCanceledError("canceling statement"), "x", False)
    assert isinstance(err, OperationalError) and not err.connection_invalidated

    async def cancelled(self: PgDirect, *args: Any) -> bool:
        async def boom(conn: asyncpg.Connection) -> None:
            raise asyncpg.exceptions.QueryCanceledError("canceling statement due to timeout")

        await self.run("WITH upd", boom)
        return True

    async def no_probe(self: PgDirect, *args: Any) -> Any:
        raise AssertionError("a cancelled statement needs no read-back")

    async with fresh_store("postgresql", tmp_path) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        got = await store.get_versioned("u", "s")
        got.state.context.append(Msg.user("x"))
        monkeypatch.setattr(PgDirect, "append", cancelled)
        monkeypatch.setattr(PgDirect, "probe", no_probe)
        with pytest.raises(StoreUnavailable) as info:
            await store.save_if_version("u", "s", got.state, 1)
        assert "unknown" not in str(info.value)


class _Proxy:
    """A TCP proxy whose client side can be cut while the server side stays open (the
    backend lives on, as after a client-side network failure)."""

    def __init__(self) -> None:
        self.links: list[dict[str, Any]] = []

    async def handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection("127.0.0.1", 5432)
        link: dict[str, Any] = {"cw": cw, "sw": sw, "cut": False}
        self.links.append(link)

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    if not link["cut"]:
                        w.write(data)
                        await w.drain()
            except Exception:  # a cut link: nothing to report
                pass
            finally:
                w.close()  # pass the end of the stream on (asyncpg's close waits for it)

        await asyncio.gather(pump(cr, sw), pump(sr, cw))

    def cut_clients(self) -> None:
        for link in self.links:
            link["cut"] = True
            link["cw"].transport.abort()

    def close(self) -> None:
        for link in self.links:
            link["sw"].transport.abort()


@pytest.mark.timeout(60)
async def test_a_lost_statement_waiting_for_a_lock_is_not_retried() -> None:
    """The client loses its connection while the append waits for a row lock (the backend
    lives on). Reading 'still at version 1' proves nothing: the caller must get
    StoreUnavailable, never a VersionConflict for an append that is then applied."""
    proxy = _Proxy()
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    names = TableNames(unique_name("orph"))
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{port}/test"
    store = SQLAgentStateStore(url, table_prefix=names.prefix, pool_size=1, max_overflow=0)
    lock = await asyncpg.connect(_dsn())
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        got = await store.get_versioned("u", "s")
        got.state.context.append(Msg.user("mine"))
        tr = lock.transaction()
        await tr.start()
        await lock.execute(
            f'UPDATE "{names.prefix}slots" SET updated_at = updated_at WHERE user_id = $1', "u"
        )
        save = asyncio.create_task(store.save_if_version("u", "s", got.state, 1))
        await asyncio.sleep(0.5)  # the direct append waits for the row lock
        proxy.cut_clients()
        await asyncio.sleep(0.5)
        await tr.rollback()  # the other writer lets go without changing anything
        with pytest.raises(StoreUnavailable, match="unknown"):
            await asyncio.wait_for(save, 20)
    finally:
        await lock.close()
        await store.aclose()
        proxy.close()
        server.close()
        await drop_tables(PG_URL, names)
