"""PostgreSQL's cold load: the head and every row in one statement, as two arrays in one
row (``PgDirect.load_cold``), checked as the row read checks them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookagent.codec import encode_msg
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore
from hookagent_store_sql.pg_direct import PgDirect
from hookagent_store_sql.verify import decode_columns, split_chunks
from sqlalchemy import update
from sqlenv import fresh_store, plant_document

SLOT = ("u", "s", "k")

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_cold_load_is_one_row_of_arrays_and_a_warm_load_the_row_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_cold, real_load = PgDirect.load_cold, PgDirect.load

    async def cold(self: PgDirect, *args: Any) -> Any:
        got = await real_cold(self, *args)
        calls.append("cold none" if got is None else f"cold {len(got)} {len(got[8])}")
        return got

    async def load(self: PgDirect, *args: Any) -> Any:
        calls.append("rows")
        return await real_load(self, *args)

    monkeypatch.setattr(PgDirect, "load_cold", cold)
    monkeypatch.setattr(PgDirect, "load", load)
    async with fresh_store("postgresql", tmp_path) as store:
        state = AgentState("s", "u")
        state.context.extend([Msg.user(t) for t in "abc"])
        await store.save_if_version("u", "s", state, 0)
        reader = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
        try:
            got = await reader.get_versioned("u", "s")
            assert [m.text for m in got.state.context] == ["a", "b", "c"]
            # one row: the head's 4 columns, the rows' 2 arrays, the chunks' 3 (1 chunk)
            assert calls == ["cold 9 1"]
            got.state.context.append(Msg.user("d"))
            await reader.save_if_version("u", "s", got.state, got.version)
            again = await reader.get_versioned("u", "s")
            assert [m.text for m in again.state.context] == ["a", "b", "c", "d"]
            assert calls == ["cold 9 1", "rows"]  # warm: the version check of the row read
            assert (await reader.get_versioned("u", "nobody")).state is None
            assert calls[-1] == "cold none"
        finally:
            await reader.aclose()


async def test_a_cold_load_refuses_missing_and_extra_rows(tmp_path: Path) -> None:
    async with fresh_store("postgresql", tmp_path) as store:
        state = AgentState("s", "u")
        state.context.extend([Msg.user(t) for t in "abc"])
        await store.save_if_version("u", "s", state, 0)
        t = store.tables
        reader = SQLAgentStateStore(store.engine, table_prefix=t.names.prefix)
        async with store.engine.begin() as conn:  # the chunk of 3 says 2: refused
            await conn.execute(update(t.chunks).values(n=2))
        with pytest.raises(CorruptState, match="says 2 messages but holds 3 records"):
            await reader.get_versioned("u", "s")
        async with store.engine.begin() as conn:
            await conn.execute(update(t.chunks).values(n=3))
            await conn.execute(update(t.slots).values(message_count=2))
        with pytest.raises(CorruptState, match="messages past them"):
            await reader.get_versioned("u", "s")
        await reader.aclose()
        # the same checks on rows as older versions wrote them
        document = state.to_json()
        await plant_document(store, "u", "s", "agent_state", document, 1)

        def fresh() -> SQLAgentStateStore:
            return SQLAgentStateStore(store.engine, table_prefix=t.names.prefix)

        async with store.engine.begin() as conn:
            await conn.execute(update(t.slots).values(message_count=2))
        reader = fresh()
        with pytest.raises(CorruptState, match="rows past them"):
            await reader.get_versioned("u", "s")
        await reader.aclose()
        async with store.engine.begin() as conn:
            await conn.execute(update(t.slots).values(message_count=3))
            await conn.execute(t.messages.delete().where(t.messages.c.seq == 1))
            await conn.execute(update(t.slots).values(message_count=2))
        reader = fresh()
        with pytest.raises(CorruptState, match="not all present"):
            await reader.get_versioned("u", "s")
        await reader.aclose()


async def test_columns_are_checked_as_rows_are() -> None:
    bodies = [encode_msg(Msg.user(t)).decode() for t in "xyz"]
    got = decode_columns([2, 0, 1], [bodies[2], bodies[0], bodies[1]], 0, 3, SLOT)
    assert [m.text for m in got] == ["x", "y", "z"]  # another order is sorted
    assert [m.text for m in decode_columns([1, 2], bodies[1:], 1, 3, SLOT)] == ["y", "z"]
    assert decode_columns([], [], 3, 3, SLOT) == []
    with pytest.raises(CorruptState, match="not all present"):
        decode_columns([0, 2], bodies[:2], 0, 2, SLOT)
    with pytest.raises(CorruptState, match="rows past them"):
        decode_columns([0, 1, 2], bodies, 0, 2, SLOT)
    with pytest.raises(CorruptState, match="not all present"):
        decode_columns([0, 0, 1], bodies, 0, 3, SLOT)
    with pytest.raises(CorruptState):  # a seq without its body
        decode_columns([0, 1, 2], bodies[:2], 0, 3, SLOT)
    with pytest.raises(CorruptState):
        decode_columns([0, 1], ["{not json", bodies[1]], 0, 2, SLOT)


def test_the_cold_loads_chunks_are_split_by_the_client_fail_closed() -> None:
    ends, ns, ks, recs = split_chunks([2, 3], [2, 1], ["a\nb", "c"], SLOT)
    assert (list(ends), list(ns), ks, recs) == ([2, 3], [2, 1], [2, 1], ["a", "b", "c"])
    with pytest.raises(CorruptState, match="chunk columns disagree"):
        split_chunks([2, 3], [2], ["a\nb", "c"], SLOT)
    with pytest.raises(CorruptState, match="chunk's body is malformed"):
        split_chunks([2], [2], [None], SLOT)
