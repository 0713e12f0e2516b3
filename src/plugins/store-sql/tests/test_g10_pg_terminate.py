"""G10: PostgreSQL backends terminated mid-save, 200 times.

A test trigger (in a schema of this test only) makes each save's UPDATE and INSERT sleep a
few milliseconds, and a killer connection calls ``pg_terminate_backend`` on our backends
while they run. Each save must be applied exactly once or not at all (resolved by reading
back its unique token), surface as a typed ``StoreUnavailable``, and leave no partial rows.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from pathlib import Path

import asyncpg
import pytest
from hookagent.errors import StoreUnavailable, VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore, TableNames
from sqlenv import PG_URL, drop_tables, unique_name

pytestmark = pytest.mark.anyio

KILLS = 200
WRITERS = 3
USER, SESSION = "g10-user", "g10-session"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _dsn() -> str:
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://")


async def _install_triggers(names: TableNames) -> None:
    conn = await asyncpg.connect(_dsn())
    try:
        schema = names.schema
        await conn.execute(
            f"""
            CREATE FUNCTION "{schema}".slow_save() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_sleep(random() * 0.006); RETURN NULL; END $$;
            CREATE TRIGGER slow_update AFTER UPDATE ON "{schema}"."{names.slots}"
                FOR EACH ROW EXECUTE FUNCTION "{schema}".slow_save();
            CREATE TRIGGER slow_insert AFTER INSERT ON "{schema}"."{names.chunks}"
                FOR EACH STATEMENT EXECUTE FUNCTION "{schema}".slow_save();
            """
        )
    finally:
        await conn.close()


async def _killer(app: str, stop: asyncio.Event, kills: list[int]) -> None:
    conn = await asyncpg.connect(_dsn())
    deadline = time.monotonic() + 90
    try:
        while len(kills) < KILLS and time.monotonic() < deadline:
            rows = await conn.fetch(
                "SELECT pid, pg_terminate_backend(pid) AS done FROM pg_stat_activity "
                "WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid() "
                "AND (query ILIKE 'UPDATE%' OR query ILIKE 'INSERT%' OR query ILIKE 'COMMIT%' "
                "OR query ILIKE '%WITH upd AS%')",
                app,
            )
            kills.extend(r["pid"] for r in rows if r["done"])
            # a random pause so that some saves complete and kills land at varied moments
            await asyncio.sleep(random.uniform(0.0005, 0.012))
    finally:
        stop.set()
        await conn.close()


async def _writer(store: SQLAgentStateStore, wid: int, stop: asyncio.Event, records: list) -> None:
    i = 0
    while not stop.is_set():
        try:
            got = await store.get_versioned(USER, SESSION)
        except StoreUnavailable:
            continue
        assert got.state is not None
        token = f"w{wid}-{i}"
        i += 1
        got.state.context.append(Msg.user(token))
        try:
            await store.save_if_version(USER, SESSION, got.state, got.version)
            records.append(("ok", token))
        except VersionConflict:
            records.append(("fail", token))
        except StoreUnavailable as exc:
            assert exc.__cause__ is not None  # the driver error is chained
            records.append(("info", token))


@pytest.mark.timeout(180)
async def test_terminated_backends_apply_each_save_once_or_not_at_all(tmp_path: Path) -> None:
    names = TableNames(unique_name("g10"), unique_name("g10s").rstrip("_"))
    app = f"hookagent-g10-{uuid.uuid4().hex[:8]}"
    store = SQLAgentStateStore(
        PG_URL,
        table_prefix=names.prefix,
        schema=names.schema,
        connect_args={"server_settings": {"application_name": app}},
    )
    try:
        await store.save_if_version(USER, SESSION, AgentState(SESSION, USER), 0)
        await _install_triggers(names)
        stop, kills, records = asyncio.Event(), [], []
        await asyncio.gather(
            _killer(app, stop, kills), *(_writer(store, w, stop, records) for w in range(WRITERS))
        )
        # after the storm the same store (same pool) writes again without a restart
        for _ in range(5):
            got = await store.get_versioned(USER, SESSION)
            token = f"calm-{got.version}"
            got.state.context.append(Msg.user(token))
            await store.save_if_version(USER, SESSION, got.state, got.version)
            records.append(("ok", token))
        await store.aclose()

        reader = SQLAgentStateStore(PG_URL, table_prefix=names.prefix, schema=names.schema)
        got = await reader.get_versioned(USER, SESSION)
        await reader.aclose()
        assert got.state is not None
        seen = Counter(m.text for m in got.state.context)
        outcome = Counter(kind for kind, _ in records)
        assert len(kills) >= KILLS
        assert outcome["info"] > 0 and outcome["ok"] > 0
        for kind, token in records:
            if kind == "ok":
                assert seen[token] == 1, token
            elif kind == "fail":
                assert seen[token] == 0, token
            else:
                assert seen[token] in (0, 1), token
        assert all(n == 1 for n in seen.values())
        assert set(seen) <= {t for _, t in records}
        applied_unknown = sum(1 for k, t in records if k == "info" and seen[t] == 1)
        print(
            f"G10: {len(kills)} backends terminated; outcomes {dict(outcome)}; "
            f"{applied_unknown} of the StoreUnavailable saves turned out applied"
        )
        assert got.version == 1 + outcome["ok"] + applied_unknown

        # no partial chunks: the count column matches the chunks, which tile 0 .. count-1
        conn = await asyncpg.connect(_dsn())
        try:
            s, c = f'"{names.schema}"."{names.slots}"', f'"{names.schema}"."{names.chunks}"'
            count = await conn.fetchval(f"SELECT message_count FROM {s} WHERE user_id = $1", USER)
            chunks = await conn.fetch(
                f"SELECT end_seq, n FROM {c} WHERE user_id = $1 ORDER BY end_seq", USER
            )
        finally:
            await conn.close()
        assert count == len(got.state.context) == sum(r["n"] for r in chunks)
        ends = [r["end_seq"] for r in chunks]
        assert [r["end_seq"] - r["n"] for r in chunks] == [0, *ends[:-1]] and ends[-1] == count
    finally:
        await store.aclose()
        await drop_tables(PG_URL, names)
