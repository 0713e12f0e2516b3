"""A row per save (migration 4): today's databases (a row per message) load and take chunk
saves, chunks tile the history or the load refuses, rewrites handle a chunk straddling
their start, the migration reruns, and the reporting view expands chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookagent.codec import encode_head, encode_msg
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore, TableNames, migrate, slot_hash
from hookagent_store_sql import save as save_mod
from hookagent_store_sql.migrations import utcnow
from hookagent_store_sql.schema import Tables
from hookagent_store_sql.verify import decode_columns, decode_mixed, decode_split
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlenv import DIALECTS, drop_tables, unique_name, url_for

pytestmark = pytest.mark.anyio

SLOT = ("u", "s", "k")
H = slot_hash("s", "agent_state")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=DIALECTS)
async def target(request, tmp_path: Path):
    url = url_for(request.param, tmp_path)
    names = TableNames(unique_name("sqlrows_"))
    yield url, names
    await drop_tables(url, names)


async def _write_as_v3(url: str, names: TableNames, texts: list[str]) -> None:
    """A slot exactly as the plugin before migration 4 wrote it: a row per message."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            from hookagent_store_sql.migrations import flavor_of

            t = Tables(names, flavor_of(conn.dialect), version=3)
            now = utcnow()
            head = encode_head(AgentState("s", "u", summary="old")).decode()
            await conn.execute(
                t.slots.insert().values(
                    user_id="u",
                    slot_hash=H,
                    session_id="s",
                    state_key="agent_state",
                    version=5,
                    generation=7,
                    message_count=len(texts),
                    head=head,
                    created_at=now,
                    updated_at=now,
                )
            )
            rows = [
                dict(
                    user_id="u",
                    slot_hash=H,
                    seq=i,
                    session_id="s",
                    state_key="agent_state",
                    role="user",
                    msg_id=Msg.user(x).id,
                    body=encode_msg(Msg.user(x)).decode(),
                )
                for i, x in enumerate(texts)
            ]
            await conn.execute(t.messages.insert(), rows)
    finally:
        await engine.dispose()


def _texts(state: Any) -> list[str]:
    return [m.text for m in state.context]


async def _layout(store: SQLAgentStateStore) -> tuple[int, list[tuple[int, int]]]:
    t = store.tables
    async with store.engine.connect() as conn:
        rows = (await conn.execute(select(func.count()).select_from(t.messages))).scalar()
        chunks = await conn.execute(select(t.chunks.c.end_seq, t.chunks.c.n))
        return int(rows or 0), sorted((c[0], c[1]) for c in chunks)


async def _view(store: SQLAgentStateStore) -> list[tuple[int, str]]:
    view = store.engine.dialect.identifier_preparer.quote(store.tables.names.message_rows)
    async with store.engine.connect() as conn:
        got = await conn.execute(
            text(f"SELECT seq, body FROM {view} WHERE user_id = 'u' ORDER BY seq")
        )
        return [(r[0], r[1]) for r in got]


async def test_a_database_of_todays_layout_loads_and_takes_chunk_saves(target) -> None:
    url, names = target
    await migrate(url, table_prefix=names.prefix, to_version=3)
    await _write_as_v3(url, names, ["r0", "r1", "r2"])
    assert (await migrate(url, table_prefix=names.prefix)).up_to_date  # nothing rewritten
    store = SQLAgentStateStore(url, table_prefix=names.prefix)
    other = SQLAgentStateStore(url, table_prefix=names.prefix)
    try:
        got = await store.get_versioned("u", "s")
        assert got.version == 5 and _texts(got.state) == ["r0", "r1", "r2"]
        state = got.state
        for v, batch in ((5, ["a0", "a1"]), (6, ["b0", "b1", "b2"])):
            state.context.extend(Msg.user(x) for x in batch)
            assert await store.save_if_version("u", "s", state, v) == v + 1
            state = (await store.get_versioned("u", "s")).state
        assert await _layout(store) == (3, [(5, 2), (8, 3)])
        want = ["r0", "r1", "r2", "a0", "a1", "b0", "b1", "b2"]
        assert _texts((await other.get_versioned("u", "s")).state) == want
        # the reporting view: one row per message, rows then chunks, the records as stored
        view = await _view(store)
        assert [s for s, _ in view] == list(range(8))
        assert [Msg.user(x).text for x in want] == [
            __import__("hookagent.codec", fromlist=["decode_msg"]).decode_msg(b).text
            for _, b in view
        ]
        # a rewrite from inside the chunk (5, 8): rewritten whole from 5, rows kept
        state.context[6:] = [Msg.user("B")]
        assert await store.save_if_version("u", "s", state, 7) == 8
        assert await _layout(store) == (3, [(5, 2), (7, 2)])
        # a rewrite from inside the old rows: the rows past it and every chunk go
        state = (await other.get_versioned("u", "s")).state
        assert _texts(state) == ["r0", "r1", "r2", "a0", "a1", "b0", "B"]
        state.context[1:] = [Msg.user("x")]
        assert await other.save_if_version("u", "s", state, 8) == 9
        assert await _layout(store) == (1, [(2, 1)])
        assert _texts((await store.get_versioned("u", "s")).state) == ["r0", "x"]
        fresh = SQLAgentStateStore(url, table_prefix=names.prefix, direct_path=False)
        assert _texts((await fresh.get_versioned("u", "s")).state) == ["r0", "x"]
        await fresh.aclose()
    finally:
        await store.aclose()
        await other.aclose()


async def test_the_migration_reruns(target) -> None:
    """Interrupted after its DDL (MySQL DDL is not transactional): the rerun completes it."""
    url, names = target
    await migrate(url, table_prefix=names.prefix)
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            ledger = conn.dialect.identifier_preparer.quote(names.migrations)
            await conn.exec_driver_sql(f"DELETE FROM {ledger} WHERE version = 4")
    finally:
        await engine.dispose()
    status = await migrate(url, table_prefix=names.prefix)
    assert status.up_to_date and status.applied == (1, 2, 3, 4)
    assert (await migrate(url, table_prefix=names.prefix)).applied == (1, 2, 3, 4)


async def test_older_code_reading_a_chunked_slot_fails_closed(target) -> None:
    """What the plugin before migration 4 does with a slot saved in chunks: it reads the
    message rows only and checks them against message_count (``decode_columns``, unchanged),
    so it refuses the slot (CorruptState) instead of returning a short history."""
    url, names = target
    store = SQLAgentStateStore(url, table_prefix=names.prefix)
    try:
        state = AgentState("s", "u")
        state.context.extend([Msg.user("a"), Msg.user("b")])
        await store.save_if_version("u", "s", state, 0)
        t = store.tables
        async with store.engine.connect() as conn:
            count = (await conn.execute(select(t.slots.c.message_count))).scalar()
            rows = (await conn.execute(select(t.messages.c.seq, t.messages.c.body))).all()
        with pytest.raises(CorruptState, match="says 2 messages but holds 0 rows"):
            decode_columns([r[0] for r in rows], [r[1] for r in rows], 0, int(count or 0), SLOT)
    finally:
        await store.aclose()


async def test_saves_split_into_chunks_under_the_byte_limit(
    target, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, names = target
    monkeypatch.setattr(save_mod, "CHUNK_BYTES", 100)
    store = SQLAgentStateStore(url, table_prefix=names.prefix)
    try:
        state = AgentState("s", "u")
        state.context.extend(Msg.user(f"message number {i} " + "x" * 30) for i in range(6))
        await store.save_if_version("u", "s", state, 0)
        rows, chunks = await _layout(store)
        assert rows == 0 and len(chunks) > 1 and sum(n for _, n in chunks) == 6
        fresh = SQLAgentStateStore(url, table_prefix=names.prefix)
        assert _texts((await fresh.get_versioned("u", "s")).state) == _texts(state)
        await fresh.aclose()
        async with store.engine.begin() as conn:  # one chunk gone: a gap
            c = store.tables.chunks
            await conn.execute(delete(c).where(c.c.end_seq == chunks[0][0]))
        fresh = SQLAgentStateStore(url, table_prefix=names.prefix)
        with pytest.raises(CorruptState):
            await fresh.get_versioned("u", "s")
        await fresh.aclose()
    finally:
        await store.aclose()


def _records(*texts: str) -> str:
    return "\n".join(encode_msg(Msg.user(x)).decode() for x in texts)


def test_the_tiling_rules() -> None:
    one = encode_msg(Msg.user("r")).decode()
    # rows 0..1, then chunks (4, 2) and (5, 1): the whole history
    got = decode_mixed(
        [0, 1], [one, one], [(4, 2, _records("c", "d")), (5, 1, _records("e"))], 0, 5, SLOT
    )
    assert [m.text for m in got] == ["r", "r", "c", "d", "e"]
    # a chunk straddling start: its records before start are dropped
    got = decode_mixed([], [], [(4, 3, _records("b", "c", "d"))], 2, 4, SLOT)
    assert [m.text for m in got] == ["c", "d"]
    bad = [
        ([0], [one], [(3, 3, _records("a", "b", "c"))], 3),  # overlap with a row
        ([], [], [(2, 2, _records("a", "b")), (3, 2, _records("b", "c"))], 3),  # chunks overlap
        ([], [], [(1, 1, _records("a")), (3, 1, _records("c"))], 3),  # a gap
        ([], [], [(3, 2, _records("a", "b", "c"))], 3),  # n says 2, 3 records
        ([], [], [(3, 3, _records("a", "b"))], 3),  # n says 3, 2 records
        ([], [], [(3, 3, _records("a", "b", "c")), (4, 1, _records("d"))], 3),  # past count
        ([], [], [(2, 3, _records("a", "b", "c"))], 2),  # starts before 0
        ([], [], [(3, 0, "")], 3),  # an empty chunk
    ]
    for seqs, bodies, chunks, count in bad:
        with pytest.raises(CorruptState):
            decode_mixed(seqs, bodies, chunks, 0, count, SLOT)


def test_the_server_split_chunks_may_come_in_any_order() -> None:
    """PostgreSQL's cold load aggregates chunks in the scan's order, which a rewrite's or a
    create's new row can put before an older one: the load orders them by end_seq."""
    one = encode_msg(Msg.user("r")).decode()
    recs = [encode_msg(Msg.user(t)).decode() for t in ("e", "c", "d")]
    got = decode_split([1, 0], [one, one], ([5, 4], [1, 2], [1, 2], recs), 5, SLOT)
    assert [m.text for m in got] == ["r", "r", "c", "d", "e"]
    with pytest.raises(CorruptState):  # still a gap, whatever the order
        decode_split([], [], ([5, 2], [1, 2], [1, 2], recs), 5, SLOT)


@settings(max_examples=200, deadline=None)
@given(
    st.text(),
    st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3),
)
def test_a_record_never_holds_a_raw_newline(body: str, meta: dict[str, str]) -> None:
    """The chunk framing relies on it: the codec's compact JSON escapes control characters
    (text, ids, metadata: any string a message can hold)."""
    for msg in (Msg.user(body), Msg.assistant(body + "\n\r\u2028"), Msg.user("x", metadata=meta)):
        assert b"\n" not in encode_msg(msg)
