"""Migrations: versioned, idempotent, in-place upgrade of a v1 database, API and CLI."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from hookagent.codec import encode_head, encode_msg
from hookagent.errors import Fenced, StoreConfigurationError, VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store import Fence
from hookagent_store_sql import (
    LATEST,
    SQLAgentStateStore,
    TableNames,
    check_migrations,
    migrate,
    slot_hash,
)
from hookagent_store_sql.__main__ import main
from hookagent_store_sql.migrations import flavor_of, utcnow
from hookagent_store_sql.schema import Tables
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlenv import DIALECTS, drop_tables, unique_name, url_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=DIALECTS)
async def target(request, tmp_path: Path):
    url = url_for(request.param, tmp_path)
    names = TableNames(unique_name("m"))
    yield url, names
    await drop_tables(url, names)


async def _write_as_v1(url: str, names: TableNames, user: str, sid: str, texts: list[str]) -> None:
    """Rows exactly as version 1 of the plugin wrote them (no generation, no fences)."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            v1 = Tables(names, flavor_of(conn.dialect), version=1)
            state = AgentState(sid, user, summary="from v1")
            h = slot_hash(sid, "agent_state")
            now = utcnow()
            await conn.execute(
                v1.slots.insert().values(
                    user_id=user,
                    slot_hash=h,
                    session_id=sid,
                    state_key="agent_state",
                    version=3,
                    message_count=len(texts),
                    head=encode_head(state).decode(),
                    created_at=now,
                    updated_at=now,
                )
            )
            rows = []
            for i, t in enumerate(texts):
                m = Msg.user(t)
                rows.append(
                    dict(
                        user_id=user,
                        slot_hash=h,
                        seq=i,
                        session_id=sid,
                        state_key="agent_state",
                        role=m.role,
                        msg_id=m.id,
                        body=encode_msg(m).decode(),
                    )
                )
            await conn.execute(v1.messages.insert(), rows)
    finally:
        await engine.dispose()


async def test_v1_database_upgrades_in_place(target) -> None:
    url, names = target
    status = await migrate(url, table_prefix=names.prefix, to_version=1)
    assert (status.current, status.pending) == (1, (2, 3, 4))
    await _write_as_v1(url, names, "alice", "s1", ["one", "two", "three"])
    before = await check_migrations(url, table_prefix=names.prefix)
    assert before.current == 1 and not before.up_to_date

    # a store that may not migrate refuses a stale schema instead of failing later
    strict = SQLAgentStateStore(url, table_prefix=names.prefix, auto_migrate=False)
    with pytest.raises(StoreConfigurationError, match="migrate"):
        await strict.get_versioned("alice", "s1")
    await strict.aclose()

    after = await migrate(url, table_prefix=names.prefix)
    assert after.up_to_date and after.current == LATEST == 4 and after.applied == (1, 2, 3, 4)
    assert (await migrate(url, table_prefix=names.prefix)).applied == (1, 2, 3, 4)  # idempotent

    store = SQLAgentStateStore(url, table_prefix=names.prefix, auto_migrate=False)
    try:
        got = await store.get_versioned("alice", "s1")
        assert got.version == 3 and got.state is not None and got.state.summary == "from v1"
        assert [m.text for m in got.state.context] == ["one", "two", "three"]
        got.state.context.append(Msg.assistant("four"))
        assert await store.save_if_version("alice", "s1", got.state, 3, fence=Fence(1, "a")) == 4
        with pytest.raises(Fenced):
            await store.save_if_version("alice", "s1", got.state, 4, fence=Fence(0, "old"))
        with pytest.raises(VersionConflict):
            await store.save_if_version("alice", "s1", got.state, 3)
        fresh = SQLAgentStateStore(url, table_prefix=names.prefix)  # no cache
        again = await fresh.get_versioned("alice", "s1")
        assert [m.text for m in again.state.context] == ["one", "two", "three", "four"]
        await fresh.aclose()
        async with store.engine.connect() as conn:
            t = store.tables
            n = (await conn.execute(select(func.count()).select_from(t.messages))).scalar()
            chunks = (await conn.execute(select(t.chunks.c.end_seq, t.chunks.c.n))).all()
            assert n == 3 and [tuple(c) for c in chunks] == [(4, 1)]  # old rows kept, a chunk
    finally:
        await store.aclose()


async def test_migrate_inside_and_outside_a_caller_transaction(target) -> None:
    url, names = target
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            async with conn.begin():  # the caller's transaction: we run inside it
                status = await migrate(conn, table_prefix=names.prefix, to_version=1)
                assert status.current == 1
            assert not conn.in_transaction()
            status = await migrate(conn, table_prefix=names.prefix)  # no transaction open
            assert status.up_to_date
            assert (await check_migrations(conn, table_prefix=names.prefix)).up_to_date
        status = await migrate(engine, table_prefix=names.prefix)
        assert status.up_to_date
    finally:
        await engine.dispose()


async def test_check_on_empty_database_and_bad_targets(tmp_path: Path) -> None:
    url = url_for("sqlite", tmp_path)
    status = await check_migrations(url, table_prefix="nothing_here_")
    assert status.current == 0 and status.pending == (1, 2, 3, 4) and not status.up_to_date
    with pytest.raises(StoreConfigurationError):
        await migrate(url, table_prefix="x_", to_version=5)
    for bad in ("Bad", "1x", "x-y", "x;drop", "a" * 32, "", "x y"):
        with pytest.raises(StoreConfigurationError):
            await migrate(url, table_prefix=bad)
        with pytest.raises(StoreConfigurationError):
            SQLAgentStateStore(url, table_prefix=bad)
    with pytest.raises(StoreConfigurationError):
        SQLAgentStateStore(url, schema="other")  # SQLite has no schemas


async def test_newer_database_is_refused(tmp_path: Path) -> None:
    url = url_for("sqlite", tmp_path)
    await migrate(url, table_prefix="n_")
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.exec_driver_sql(
            "INSERT INTO n_schema_migrations (version, name, applied_at) VALUES (99, 'future', '2030-01-01')"
        )
    await engine.dispose()
    with pytest.raises(StoreConfigurationError, match="newer"):
        await migrate(url, table_prefix="n_")
    store = SQLAgentStateStore(url, table_prefix="n_")
    with pytest.raises(StoreConfigurationError):
        await store.exists("u", "s")
    await store.aclose()


def test_cli_module_runs(tmp_path: Path) -> None:
    """``python -m hookagent_store_sql`` itself (the rest of the CLI runs in-process)."""
    url = url_for("sqlite", tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "hookagent_store_sql", "migrate", url, "--table-prefix", "cli_"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "schema at version 4 (latest 4)" in r.stdout, r


@pytest.mark.parametrize("dialect", DIALECTS)
def test_cli_check_and_migrate(dialect: str, tmp_path: Path, capsys) -> None:
    url = url_for(dialect, tmp_path)
    names = TableNames(unique_name("c"))

    def cli(*args: str) -> tuple[int, str, str]:
        code = main([*args])
        out = capsys.readouterr()
        return code, out.out, out.err

    try:
        code, out, _ = cli("check", url, "--table-prefix", names.prefix)
        assert code == 1 and "pending: 1, 2, 3, 4" in out
        code, out, _ = cli("migrate", url, "--table-prefix", names.prefix, "--to", "1")
        assert code == 0 and "version 1" in out
        code, out, _ = cli("check", url, "--table-prefix", names.prefix)
        assert code == 1 and "version 1" in out and "pending: 2, 3, 4" in out
        code, out, _ = cli("migrate", url, "--table-prefix", names.prefix)
        assert code == 0 and "version 4" in out
        code, out, _ = cli("check", url, "--table-prefix", names.prefix)
        assert code == 0 and "pending: none" in out
        code, _, err = cli("check", url, "--table-prefix", "Bad-Prefix")
        assert code == 2 and "table_prefix" in err
    finally:
        asyncio.run(drop_tables(url, names))
