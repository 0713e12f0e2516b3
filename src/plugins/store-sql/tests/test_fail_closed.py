"""Issue 13 on every dialect and path: a state is bound to its slot, a newer schema is never
overwritten, and a slot damaged behind the store's back (raw SQL) fails closed: its load and
every save form raise naming the slot, and the refused save leaves every row as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hookagent.codec import encode_head, encode_msg
from hookagent.errors import (
    CorruptState,
    InvalidState,
    StateSlotMismatch,
    UnsupportedSchemaVersion,
)
from hookagent.messages import Msg
from hookagent.state import AgentState, History
from hookagent.store import UNCONDITIONAL, Fence
from hookagent.store.ids import slot_name
from hookagent_store_sql import SQLAgentStateStore, slot_hash
from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import create_async_engine
from sqlenv import fresh_store, plant_document

pytestmark = pytest.mark.anyio

NAME = slot_name("u", "s", "agent_state")
H = slot_hash("s", "agent_state")
PATHS = {
    "postgresql": ("postgresql", {}),
    "postgresql-sqlalchemy": ("postgresql", {"direct_path": False}),
    "mariadb": ("mariadb", {}),
    "sqlite": ("sqlite", {}),
    "sqlite-sqlalchemy": ("sqlite", {"direct_path": False}),
    "sqlite-engine": ("sqlite-engine", {}),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=list(PATHS))
async def store(request: Any, tmp_path: Path) -> AsyncIterator[SQLAgentStateStore]:
    dialect, kw = PATHS[request.param]
    if dialect == "sqlite-engine":  # a caller's aiosqlite engine: the AsyncRunner path
        engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'given.db'}")
        s = SQLAgentStateStore(engine, table_prefix="given_")
        yield s
        await s.aclose()
        await engine.dispose()
        return
    async with fresh_store(dialect, tmp_path, **kw) as s:
        yield s


def handle(store: SQLAgentStateStore) -> SQLAgentStateStore:
    """Another instance on the same tables (another process, say): nothing cached."""
    return SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)


def state_of(*texts: str, user: str = "u", session: str = "s") -> AgentState:
    state = AgentState(session, user)
    state.context.extend(Msg.user(t) for t in texts)
    return state


async def rows(store: SQLAgentStateStore) -> tuple[list[tuple[Any, ...]], ...]:
    """Every row of the store's tables, in a fixed order."""
    t = store.tables
    async with store.engine.connect() as conn:
        out = []
        for table in (t.slots, t.messages, t.chunks, t.fences):
            got = await conn.execute(select(table).order_by(*table.primary_key.columns))
            out.append([tuple(r) for r in got])
    return tuple(out)


async def plant(store: SQLAgentStateStore, stmt: Any) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(stmt)


def _slot(store: SQLAgentStateStore, **values: Any) -> Any:
    s = store.tables.slots
    return update(s).where(s.c.user_id == "u", s.c.slot_hash == H).values(**values)


def _body(store: SQLAgentStateStore, body: str) -> Any:
    m = store.tables.messages
    return update(m).where(m.c.user_id == "u", m.c.slot_hash == H, m.c.seq == 1).values(body=body)


def _drop_row(store: SQLAgentStateStore) -> Any:
    m = store.tables.messages
    return delete(m).where(m.c.user_id == "u", m.c.slot_hash == H, m.c.seq == 1)


def _chunk(store: SQLAgentStateStore, **values: Any) -> Any:
    c = store.tables.chunks
    return update(c).where(c.c.user_id == "u", c.c.slot_hash == H).values(**values)


def _overlap(store: SQLAgentStateStore) -> Any:
    row = dict(user_id="u", slot_hash=H, seq=1, session_id="s", state_key="agent_state")
    body = encode_msg(Msg.user("b")).decode()
    return insert(store.tables.messages).values(**row, role="user", msg_id="x", body=body)


def _records(*bodies: str) -> str:
    return "\n".join(bodies)


def _newer_head() -> str:
    head = encode_head(AgentState("s", "u", summary="from the future")).decode()
    return head.replace('"schema_version":1', '"schema_version":99')


HEAD = {  # damage to the head row: every handle sees it (the head is read on every load)
    "head-garbage": lambda st: _slot(st, head="{not json"),
    "head-empty": lambda st: _slot(st, head=""),
    "head-not-json": lambda st: _slot(st, head="hello"),
    "head-array": lambda st: _slot(st, head="[1, 2]"),
    "head-of-another-slot": lambda st: _slot(
        st, head=encode_head(AgentState("elsewhere", "bob")).decode()
    ),
    "count-minus-one": lambda st: _slot(st, message_count=-1),
    "count-too-high": lambda st: _slot(st, message_count=5),
    "count-too-low": lambda st: _slot(st, message_count=2),  # a row past the count
    "version-zero": lambda st: _slot(st, version=0),
    "version-minus-one": lambda st: _slot(st, version=-1),
    "version-max": lambda st: _slot(st, version=2**63 - 1),  # +1 would not fit
    "generation-minus-one": lambda st: _slot(st, generation=-1),
    "newer-schema": lambda st: _slot(st, head=_newer_head()),
    "newer-schema-saved": lambda st: _slot(st, head=_newer_head(), version=2),
}
ROWS = {  # damage to message rows: a handle that holds them decoded does not reread them
    "row-missing": _drop_row,
    "row-garbage": lambda st: _body(st, "{not json"),
    "row-not-a-message": lambda st: _body(st, '{"role": 5, "content": "x"}'),
    "row-with-nul": lambda st: _body(st, encode_msg(Msg.user("b")).decode() + "\x00"),
}


CHUNKS = {  # damage to the chunk a save wrote (a, b, c: end_seq 3, n 3)
    "chunk-missing": lambda st: delete(st.tables.chunks),
    "chunk-n-too-low": lambda st: _chunk(st, n=2),
    "chunk-n-too-high": lambda st: _chunk(st, n=4),  # also starts before 0
    "chunk-one-record-short": lambda st: _chunk(
        st, body=_records(*(encode_msg(Msg.user(t)).decode() for t in "ab"))
    ),
    "chunk-garbage": lambda st: _chunk(st, body=_records("[1]", "{not json", "[]")),
    "chunk-gap": lambda st: _chunk(st, end_seq=4, n=3),  # seq 0 missing, 3 past the count
    "chunk-overlap": _overlap,  # a message row at seq 1 inside the chunk
    "chunk-short-of-count": lambda st: _slot(st, message_count=4),
}


def expected_error(damage: str) -> type[InvalidState]:
    return UnsupportedSchemaVersion if damage.startswith("newer-schema") else CorruptState


async def refused(
    store: SQLAgentStateStore, error: type[Exception], before: Any, **kw: Any
) -> None:
    """Every save form is refused with ``error`` naming the slot, and writes nothing."""
    attempts: list[tuple[Any, Fence | None]] = [
        (1, None),
        (2, None),
        (UNCONDITIONAL, None),
        (0, None),
        (1, Fence(7, "me")),
        (UNCONDITIONAL, Fence(7, "me")),
    ]
    for expected, fence in attempts:
        with pytest.raises(error) as info:
            await store.save_if_version("u", "s", state_of("x", "y"), expected, fence=fence)
        assert NAME in str(info.value), (expected, fence, info.value)
        assert await rows(store) == before, (expected, fence)


async def seeded(store: SQLAgentStateStore, *, rows_layout: bool = False) -> None:
    """Slot ("u", "s") at version 1 with messages a, b, c; ``store`` holds it (warm).
    ``rows_layout``: written as older versions wrote it (a row per message), else by a save
    (one chunk)."""
    if rows_layout:
        document = state_of("a", "b", "c").to_json()
        await plant_document(store, "u", "s", "agent_state", document, 1)
    else:
        assert await store.save_if_version("u", "s", state_of("a", "b", "c"), 0) == 1
    assert (await store.get_versioned("u", "s")).version == 1


@pytest.mark.parametrize("damage", list(HEAD) + list(ROWS) + list(CHUNKS))
async def test_a_damaged_slot_fails_closed(store: SQLAgentStateStore, damage: str) -> None:
    await seeded(store, rows_layout=damage in ROWS)
    if damage == "row-with-nul" and store.engine.dialect.name == "postgresql":
        with pytest.raises(Exception, match="0x00"):  # PostgreSQL text cannot hold a NUL
            await plant(store, ROWS[damage](store))
        return
    await plant(store, (HEAD | ROWS | CHUNKS)[damage](store))
    before = await rows(store)
    error = expected_error(damage)
    fresh = handle(store)
    with pytest.raises(error) as info:
        await fresh.get_versioned("u", "s")
    assert NAME in str(info.value)
    await refused(fresh, error, before)  # after a failed load: the case of issue 13
    await refused(handle(store), error, before)  # a save with no load before it
    if damage in HEAD or damage == "chunk-short-of-count":
        # the warm handle's compare-and-set (version, generation, count, head) fails, so the
        # transaction reads the row and checks it before anything is written
        await refused(store, error, before)
        with pytest.raises(error):
            await store.get_versioned("u", "s")
    else:
        # the rows this handle decoded are not reread (a load trusts them as well); the head
        # and counters are checked on every save and load; a fresh handle sees the damage
        if damage == "chunk-gap":  # its chunk ends past what the handle holds: read, refused
            with pytest.raises(CorruptState):
                await store.get_versioned("u", "s")
        else:
            assert len((await store.get_versioned("u", "s")).state.context) == 3
    assert await rows(store) == before
    # the repair is explicit: delete, then save anew
    assert await fresh.delete("u", "s", "agent_state")
    assert await fresh.save_if_version("u", "s", state_of("new"), 0) == 1
    assert [m.text for m in (await handle(store).get_versioned("u", "s")).state.context] == ["new"]


async def test_a_newer_schema_is_refused_with_the_shared_rule(store: SQLAgentStateStore) -> None:
    await seeded(store)
    await plant(store, _slot(store, head=_newer_head(), version=2))
    with pytest.raises(UnsupportedSchemaVersion, match="never overwrites a newer schema"):
        await handle(store).save_if_version("u", "s", state_of("x"), UNCONDITIONAL)


async def test_a_state_is_bound_to_its_slot(store: SQLAgentStateStore) -> None:
    bob = state_of("hi", user="bob", session="b")
    for expected in (0, UNCONDITIONAL):
        with pytest.raises(StateSlotMismatch, match="re-address"):
            await store.save_if_version("alice", "x", bob, expected)
    assert not await store.exists("alice", "x")
    await store.save_if_version("u", "s", state_of("a"), 0)
    before = await rows(store)
    other_session = state_of("b", session="other")
    for expected, fence in ((1, None), (UNCONDITIONAL, None), (1, Fence(3, "me"))):
        with pytest.raises(StateSlotMismatch):
            await store.save_if_version("u", "s", other_session, expected, fence=fence)
    assert await rows(store) == before  # not even the fence was recorded


@pytest.mark.parametrize("epoch", [2**60, 2**53, -1])
async def test_a_fence_epoch_out_of_range_is_corrupt(store: SQLAgentStateStore, epoch: int) -> None:
    await store.save_if_version("u", "s", state_of("a"), 0, fence=Fence(1, "me"))
    f = store.tables.fences
    await plant(store, update(f).where(f.c.user_id == "u").values(epoch=epoch))
    before = await rows(store)
    for expected in (1, UNCONDITIONAL):
        with pytest.raises(CorruptState, match="fence epoch") as info:
            await store.save_if_version(
                "u", "s", state_of("a", "b"), expected, fence=Fence(2, "me")
            )
        assert NAME in str(info.value)
        assert await rows(store) == before


async def test_errors_name_the_slot(store: SQLAgentStateStore) -> None:
    bad = state_of("a")
    bad.extensions["x"] = {1, 2}  # not JSON
    with pytest.raises(InvalidState) as info:
        await store.save_if_version("u", "s", bad, 0)
    assert NAME in str(info.value)
    await store.save_if_version("u", "s", state_of("a"), 0, fence=Fence(5, "one"))
    for expected in (1, UNCONDITIONAL):
        with pytest.raises(Exception, match="stale") as fenced:
            await store.save_if_version("u", "s", state_of("a"), expected, fence=Fence(4, "x"))
        assert NAME in str(fenced.value)


async def test_an_edit_saved_at_the_current_version_reaches_every_handle(
    store: SQLAgentStateStore,
) -> None:
    """A state decoded from JSON has no committed prefix (i13-core's codec): saved at the
    current version, its edited history is rewritten and another handle's cache drops."""
    await seeded(store)
    other = handle(store)
    assert len((await other.get_versioned("u", "s")).state.context) == 3  # other is warm
    got = await store.get_versioned("u", "s")
    edited = AgentState.from_json(got.state.to_json())
    edited.context = History([Msg.user("A"), *list(edited.context)[1:]])  # uncommitted
    assert await store.save_if_version("u", "s", edited, got.version) == 2
    for h in (other, store, handle(store)):
        assert [m.text for m in (await h.get_versioned("u", "s")).state.context] == [
            "A",
            "b",
            "c",
        ]


async def test_rows_past_the_count_refuse_the_warm_append(store: SQLAgentStateStore) -> None:
    """A stray chunk where the next append writes: CorruptState, not a driver error."""
    await seeded(store)
    stray = encode_msg(Msg.user("stray")).decode()
    row = dict(user_id="u", slot_hash=H, end_seq=4, n=1, body=stray)
    await plant(store, insert(store.tables.chunks).values(**row))
    before = await rows(store)
    got = state_of("a", "b", "c")
    got.context.mark_committed()
    got.context.append(Msg.user("d"))
    with pytest.raises(CorruptState, match="past its message_count") as info:
        await store.save_if_version("u", "s", got, 1)
    assert NAME in str(info.value)
    assert await rows(store) == before


async def test_a_warm_save_matches_its_head_without_a_read(
    store: SQLAgentStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compare-and-set's head check matches for any text (the client's MD5 of the UTF-8
    head equals the server's): a warm append and a warm rewrite never read the slot."""
    head_text = "caf\u00e9 \u6f22\u5b57 \U0001f600 e\u0301 \\ \" ' % _"
    state = state_of("a")
    state.summary = head_text
    await store.save_if_version("u", "s", state, 0)
    got = await store.get_versioned("u", "s")

    def no_read(*args: Any) -> None:
        raise AssertionError("the save read the slot: its compare-and-set did not match")

    monkeypatch.setattr("hookagent_store_sql.save.SavePlan._inspect", no_read)
    got.state.context.append(Msg.user("b"))
    assert await store.save_if_version("u", "s", got.state, 1) == 2  # the append
    got.state.context[0] = Msg.user("A")
    assert await store.save_if_version("u", "s", got.state, 2) == 3  # a rewrite
    again = await store.get_versioned("u", "s")  # decoded from the rows, not our writes
    assert again.state.summary == head_text
    again.state.context.append(Msg.user("c"))
    assert await handle(store).get_versioned("u", "s") is not None
    assert await store.save_if_version("u", "s", again.state, 3) == 4
    final = await handle(store).get_versioned("u", "s")
    assert [m.text for m in final.state.context] == ["A", "b", "c"]
