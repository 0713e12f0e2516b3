"""What the conformance suite cannot see: statements issued, tail-only loads, orphan rows,
long and look-alike ids, corrupt rows, and the wiring (plugin, URLs, options)."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from pathlib import Path

import asyncpg
import pytest
from hookagent.codec import encode_msg
from hookagent.errors import (
    CorruptState,
    InvalidState,
    StoreConfigurationError,
    StoreUnavailable,
    VersionConflict,
)
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store import UNCONDITIONAL, AgentStateStore
from hookagent_store_sql import SQLAgentStateStore, slot_hash
from hookagent_store_sql.plugin import (
    Opening,
    create_store,
    hookagent_register_state_stores,
    open_store,
)
from hookagent_store_sql.verify import decode_tail
from sqlalchemy import event, func, select, update
from sqlenv import DIALECTS, fresh_store, url_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=DIALECTS)
async def store(request, tmp_path: Path):
    async with fresh_store(request.param, tmp_path) as s:
        yield s


class Statements:
    """Records (verb, statement, number of parameter sets) for each statement sent: through
    SQLAlchemy (cursor events) and by the store's direct paths (asyncpg calls on PostgreSQL;
    on SQLite every statement the sqlite3 connections run, from their trace callback, where
    an executemany of n rows shows as n INSERTs in a row)."""

    def __init__(self, store: SQLAgentStateStore) -> None:
        self.seen: list[tuple[str, str, int]] = []
        self.params: list[object] = []
        self._engine = store.data_engine
        self._sqlite = self._engine.dialect.name == "sqlite"
        self._traced: list[object] = []
        self._patched = []
        if self._sqlite:
            event.listen(self._engine, "checkout", self._trace)
            held = getattr(getattr(store._direct, "_batch", None), "held", None)
            fairy = getattr(held, "_fairy", None)  # the connection the file's thread holds
            if fairy is not None:
                self._trace(fairy.driver_connection, None, None)
            return
        event.listen(self._engine, "before_cursor_execute", self._on)
        for name in ("fetch", "fetchrow"):
            real = getattr(asyncpg.Connection, name)

            def spy(conn, query, *args, _real=real, **kw):
                self._record(query, list(args), 1)
                return _real(conn, query, *args, **kw)

            setattr(asyncpg.Connection, name, spy)
            self._patched.append((name, real))

    def _trace(self, dbapi_conn, record, proxy) -> None:
        dbapi_conn.set_trace_callback(lambda sql: self._record(sql, None, 1))
        self._traced.append(dbapi_conn)

    def _on(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self._record(statement, parameters, len(parameters) if executemany else 1)

    def _record(self, statement: str, parameters: object, n: int) -> None:
        verb = statement.split()[0].upper()
        if self._sqlite and self.seen and verb == "INSERT" and self.seen[-1][0] == verb:
            self.seen[-1] = (verb, statement, self.seen[-1][2] + 1)  # one executemany
            return
        self.seen.append((verb, statement, n))
        self.params.append(parameters)

    def close(self) -> None:
        if self._sqlite:
            event.remove(self._engine, "checkout", self._trace)
            for conn in self._traced:
                conn.set_trace_callback(None)
            return
        event.remove(self._engine, "before_cursor_execute", self._on)
        for name, real in self._patched:
            setattr(asyncpg.Connection, name, real)

    def writes(self) -> list[tuple[str, str, int]]:
        return [s for s in self.seen if s[0] in ("INSERT", "UPDATE", "DELETE", "WITH")]


def _texts(state) -> list[str]:
    return [m.text for m in state.context]


async def test_append_writes_only_the_new_rows(store) -> None:
    state = AgentState("s", "u")
    state.context.extend(Msg.user(f"m{i}") for i in range(100))
    await store.save_if_version("u", "s", state, 0)
    got = await store.get_versioned("u", "s")
    got.state.context.extend(Msg.assistant(f"n{i}") for i in range(4))
    rec = Statements(store)
    try:
        await store.save_if_version("u", "s", got.state, 1)
        writes = rec.writes()
        if store.engine.dialect.name == "postgresql":
            # one statement: the CAS UPDATE and the INSERT of one chunk (arrays of 1)
            assert [w[0] for w in writes] == ["WITH"], writes
            params = rec.params[-1]
            assert sorted(len(p) for p in params if isinstance(p, list)) == [1, 1, 1]
            assert [p for p in params if isinstance(p, list)][1] == [4]  # n: 4, not 104
        else:
            assert [w[0] for w in writes] == ["UPDATE", "INSERT"], writes
            assert writes[1][2] == 1  # one chunk row of the 4 messages
        rec.seen.clear()
        # a changed prefix: drop the last two, add one -> the chunk 100..103 holds 102, so
        # it is rewritten whole: DELETE (rows, chunks) from 100, INSERT one chunk of 3
        got.state.context[102:] = [Msg.user("replaced")]
        await store.save_if_version("u", "s", got.state, 2)
        assert [w[0] for w in rec.writes()] == ["UPDATE", "DELETE", "DELETE", "INSERT"]
        assert rec.writes()[3][2] == 1
    finally:
        rec.close()
    fresh = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
    final = await fresh.get_versioned("u", "s")
    assert _texts(final.state) == [f"m{i}" for i in range(100)] + ["n0", "n1", "replaced"]
    async with store.engine.connect() as conn:
        t = store.tables
        rows = (await conn.execute(select(func.count()).select_from(t.messages))).scalar()
        chunks = (await conn.execute(select(t.chunks.c.end_seq, t.chunks.c.n))).all()
        count = (await conn.execute(select(t.slots.c.message_count))).scalar()
    assert rows == 0 and count == 103
    assert sorted(tuple(c) for c in chunks) == [(100, 100), (103, 3)]


async def test_an_unchanged_warm_load_is_a_version_check_on_postgresql(tmp_path: Path) -> None:
    """A load of a slot still at the version and generation this instance holds gets no
    head and no row back (one statement); a head another instance wrote is read in full."""
    async with fresh_store("postgresql", tmp_path) as store:
        other = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
        state = AgentState("s", "u")
        state.context.extend([Msg.user("hi"), Msg.assistant("hello")])
        await store.save_if_version("u", "s", state, 0)
        await store.get_versioned("u", "s")  # the direct path is set up by now
        direct = store._direct
        answers: list[list[object]] = []
        real = direct.load

        async def spy(*args: object) -> list[object]:
            rows = await real(*args)
            answers.append(list(rows))
            return rows

        direct.load = spy
        rec = Statements(store)
        try:
            for _ in range(2):
                answers.clear()
                rec.seen.clear()
                got = await store.get_versioned("u", "s")
                assert got.version == 1 and _texts(got.state) == ["hi", "hello"]
                assert [s[0] for s in rec.seen] == ["SELECT"]  # one statement
                ((head_row,),) = answers  # the head row only, its body not sent
                assert head_row[0] == -1 and head_row[1] == 1 and head_row[4] is None
            theirs = await other.get_versioned("u", "s")
            theirs.state.summary = "from the other instance"
            await other.save_if_version("u", "s", theirs.state, 1)  # a new head, no new row
            answers.clear()
            mine = await store.get_versioned("u", "s")
            assert mine.version == 2 and mine.state.summary == "from the other instance"
            assert answers[0][0][4] is not None and len(answers[0]) == 1
            answers.clear()
            again = await store.get_versioned("u", "s")  # and a version check again
            assert again.state.summary == "from the other instance"
            assert answers[0][0][4] is None
        finally:
            rec.close()
            direct.load = real
            await other.aclose()


async def test_a_head_damaged_without_a_new_version_is_refused_by_the_next_save(
    tmp_path: Path,
) -> None:
    """The version-check load does not resend a head whose version and generation did not
    move, so a head damaged in place is first met by the next save: its compare-and-set
    (the MD5 of the head held) misses, it reads the stored head, and refuses it; nothing is
    written, and a fresh reader sees the damage."""
    async with fresh_store("postgresql", tmp_path) as store:
        state = AgentState("s", "u")
        state.context.append(Msg.user("a"))
        await store.save_if_version("u", "s", state, 0)
        got = await store.get_versioned("u", "s")
        t = store.tables
        async with store.engine.begin() as conn:
            await conn.execute(update(t.slots).values(head="{not json"))
        again = await store.get_versioned("u", "s")  # the head this instance holds
        assert again.version == 1 and _texts(again.state) == ["a"]
        got.state.context.append(Msg.user("b"))
        with pytest.raises(CorruptState):
            await store.save_if_version("u", "s", got.state, 1)
        async with store.engine.connect() as conn:
            row = (await conn.execute(select(t.slots.c.version, t.slots.c.head))).one()
        assert tuple(row) == (1, "{not json")  # nothing written, the evidence kept
        reader = SQLAgentStateStore(store.engine, table_prefix=t.names.prefix)
        with pytest.raises(CorruptState):
            await reader.get_versioned("u", "s")


async def test_loads_decode_only_the_new_tail(store) -> None:
    other = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
    state = AgentState("s", "u")
    state.context.extend(Msg.user(f"m{i}") for i in range(5))
    await store.save_if_version("u", "s", state, 0)
    first = await store.get_versioned("u", "s")
    # another instance (another process, say) appends two messages
    theirs = await other.get_versioned("u", "s")
    theirs.state.context.extend([Msg.user("x"), Msg.user("y")])
    await other.save_if_version("u", "s", theirs.state, 1)
    second = await store.get_versioned("u", "s")
    assert _texts(second.state) == ["m0", "m1", "m2", "m3", "m4", "x", "y"]
    assert second.state.context[0] is first.state.context[0]  # reused, not re-read
    # a rewrite elsewhere bumps the generation: the cache must not be trusted
    theirs = await other.get_versioned("u", "s")
    theirs.state.context[0] = Msg.user("new-first")
    await other.save_if_version("u", "s", theirs.state, 2)
    third = await store.get_versioned("u", "s")
    assert _texts(third.state)[0] == "new-first" and len(third.state.context) == 7
    # delete + recreate elsewhere with a longer history: still no stale prefix
    assert await other.delete("u", "s")
    fresh = AgentState("s", "u")
    fresh.context.extend(Msg.user(f"r{i}") for i in range(9))
    await other.save_if_version("u", "s", fresh, 0)
    fourth = await store.get_versioned("u", "s")
    assert fourth.version == 1 and _texts(fourth.state) == [f"r{i}" for i in range(9)]


async def test_orphan_message_rows_never_leak_into_a_new_slot(store) -> None:
    """AgentScope Java #3162: leftover rows under a slot's address must not resurface."""
    await store.exists("u", "s")  # creates the tables
    t = store.tables
    h = slot_hash("s", "agent_state")
    orphan = Msg.user("orphan")
    rows = [
        dict(
            user_id="u",
            slot_hash=h,
            seq=i,
            session_id="s",
            state_key="agent_state",
            role="user",
            msg_id=orphan.id,
            body=encode_msg(orphan).decode(),
        )
        for i in range(3)
    ]
    chunk = dict(user_id="u", slot_hash=h, end_seq=1, n=1, body=encode_msg(orphan).decode())
    async with store.engine.begin() as conn:
        await conn.execute(t.messages.insert(), rows)
        await conn.execute(t.chunks.insert(), [chunk, {**chunk, "end_seq": 7}])
    assert (await store.get_versioned("u", "s")).version == 0
    state = AgentState("s", "u")
    state.context.append(Msg.user("mine"))
    assert await store.save_if_version("u", "s", state, 0) == 1
    with pytest.raises(VersionConflict):
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    got = await SQLAgentStateStore(store.engine, table_prefix=t.names.prefix).get_versioned(
        "u", "s"
    )
    assert _texts(got.state) == ["mine"]
    async with store.engine.connect() as conn:
        n = (await conn.execute(select(func.count()).select_from(t.messages))).scalar()
        c = (await conn.execute(select(t.chunks.c.end_seq, t.chunks.c.n))).all()
    assert n == 0 and [tuple(r) for r in c] == [(1, 1)]


async def test_long_and_lookalike_ids_do_not_collide(store) -> None:
    nfc = unicodedata.normalize("NFC", "\u00e9") * 256
    nfd = unicodedata.normalize("NFD", "\u00e9") * 128  # 256 code points
    ids = ["A" * 256, "a" * 256, nfc, nfd, "\U0001f600" * 256, "a" * 255 + " ", "a" * 255]
    for i, uid in enumerate(ids):
        # worst case: every id of the slot at full length and 4 bytes per character
        sid, key = ids[(i + 1) % len(ids)], ids[(i + 2) % len(ids)]
        await store.save_if_version(uid, sid, AgentState(sid, uid, summary=str(i)), 0, key=key)
    for i, uid in enumerate(ids):
        sid, key = ids[(i + 1) % len(ids)], ids[(i + 2) % len(ids)]
        got = await store.get_versioned(uid, sid, key)
        assert got.version == 1 and got.state.summary == str(i)
        assert (await store.list_session_ids(uid)).session_ids == (sid,)


async def test_corrupt_rows_are_typed_errors(store) -> None:
    state = AgentState("s", "u")
    state.context.extend([Msg.user("a"), Msg.user("b")])
    await store.save_if_version("u", "s", state, 0)
    t = store.tables
    reader = SQLAgentStateStore(store.engine, table_prefix=t.names.prefix)
    first = encode_msg(Msg.user("a")).decode()
    async with store.engine.begin() as conn:
        await conn.execute(update(t.chunks).values(body=first + "\n{not json"))
    with pytest.raises(CorruptState):
        await reader.get_versioned("u", "s")
    async with store.engine.begin() as conn:
        await conn.execute(update(t.chunks).values(body=first))
    with pytest.raises(CorruptState, match="says 2 messages but holds 1 records"):
        await reader.get_versioned("u", "s")
    async with store.engine.begin() as conn:
        await conn.execute(t.chunks.delete())
    with pytest.raises(CorruptState, match="not all present"):
        await reader.get_versioned("u", "s")
    async with store.engine.begin() as conn:
        await conn.execute(
            update(t.slots).values(head='{"lc":1,"type":"constructor"}', message_count=1)
        )
    with pytest.raises(InvalidState):  # an envelope stays inert data
        await reader.get_versioned("u", "s")


async def test_unconditional_creates_and_rewrites(store) -> None:
    state = AgentState("s", "u")
    state.context.append(Msg.user("one"))
    assert await store.save_if_version("u", "s", state, UNCONDITIONAL) == 1
    state.context.append(Msg.user("two"))
    assert await store.save_if_version("u", "s", state, UNCONDITIONAL) == 2
    got = await SQLAgentStateStore(
        store.engine, table_prefix=store.tables.names.prefix
    ).get_versioned("u", "s")
    assert _texts(got.state) == ["one", "two"] and got.version == 2


# ---------------------------------------------------------------------- wiring


def test_plugin_registers_every_scheme() -> None:
    seen = {}
    localities = {}

    def register(scheme, factory, *, locality="shared"):
        seen.setdefault(scheme, factory)
        localities[scheme] = locality

    hookagent_register_state_stores(register)
    assert {"postgresql+asyncpg", "mysql+aiomysql", "mariadb+aiomysql", "sqlite+aiosqlite"} <= set(
        seen
    )
    assert all(f is open_store for f in seen.values())
    assert localities["sqlite"] == localities["sqlite+aiosqlite"] == "host"  # one machine's file
    assert localities["postgresql"] == localities["mariadb"] == "shared"  # a server
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="hookagent")}
    assert eps.get("store-sql") == "hookagent_store_sql.plugin"


async def test_url_options_and_factory(tmp_path: Path) -> None:
    url = url_for("sqlite", tmp_path) + "?table_prefix=opt_&auto_migrate=false"
    store = create_store(url)
    assert isinstance(store, AgentStateStore)
    with pytest.raises(StoreConfigurationError, match="migrate"):
        await store.exists("u", "s")
    await store.aclose()
    store = create_store(url_for("sqlite", tmp_path) + "?table_prefix=opt_")
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 0) == 1
    async with store.engine.connect() as conn:
        assert (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar() == "wal"
        names = {
            r[0]
            for r in await conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")
        }
    assert {"opt_slots", "opt_messages", "opt_fences", "opt_schema_migrations"} <= names
    await store.aclose()
    for bad in (
        "redis://x",
        "oracle://x/y",
        "sqlite+aiosqlite://",
        "sqlite+aiosqlite:///:memory:",
        "not a url",
    ):
        with pytest.raises(StoreConfigurationError):
            create_store(bad)
    with pytest.raises(StoreConfigurationError):
        create_store(url_for("sqlite", tmp_path) + "?auto_migrate=maybe")


async def test_the_registered_factory_opens_the_store(tmp_path: Path) -> None:
    """open_store: bad URLs fail at once; the tables are made at open; a failure to open is
    left for the first operation (the database may come up later)."""
    with pytest.raises(StoreConfigurationError):
        open_store("sqlite+aiosqlite:///:memory:")
    pending = open_store(url_for("sqlite", tmp_path) + "?table_prefix=late_&auto_migrate=false")
    assert isinstance(pending, Opening)
    store = await pending
    try:
        with pytest.raises(StoreConfigurationError, match="migrate"):
            await store.exists("u", "s")
    finally:
        await store.aclose()
    store = await open_store(url_for("sqlite", tmp_path) + "?table_prefix=early_")
    try:
        async with store.engine.connect() as conn:
            rows = await conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")
            assert "early_slots" in {r[0] for r in rows}
        assert await store.save_if_version("u", "s", AgentState("s", "u"), 0) == 1
    finally:
        await store.aclose()
    down = await open_store("postgresql+asyncpg://postgres@127.0.0.1:1/test?table_prefix=d_")
    try:
        with pytest.raises(StoreUnavailable):
            await down.exists("u", "s")
    finally:
        await down.aclose()


async def test_rows_past_the_count_and_unsorted_rows(store) -> None:
    """The load statement neither joins nor sorts: rows in another order are sorted; a gap,
    and a row past message_count (the count disagrees with the rows), are CorruptState."""
    state = AgentState("s", "u")
    state.context.extend([Msg.user("a"), Msg.user("b")])
    await store.save_if_version("u", "s", state, 0)
    stray = Msg.user("stray")
    h = slot_hash("s", "agent_state")
    row = dict(user_id="u", slot_hash=h, end_seq=3, n=1, body=encode_msg(stray).decode())
    async with store.engine.begin() as conn:
        await conn.execute(store.tables.chunks.insert(), [row])
    fresh = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
    with pytest.raises(CorruptState, match="messages past them"):
        await fresh.get_versioned("u", "s")
    with pytest.raises(CorruptState, match="past its message_count"):
        state.context.append(Msg.user("c"))  # the warm append's chunk (end 3) meets the stray
        await store.save_if_version("u", "s", state, 1)
    bodies = [encode_msg(Msg.user(t)).decode() for t in "xyz"]
    head = (-1, 1, 0, 3, "{}")
    rows = [head, (2, None, None, None, bodies[2]), (0, None, None, None, bodies[0])]
    rows.append((1, None, None, None, bodies[1]))
    got = decode_tail(rows, 0, 3, ("u", "s", "k"))
    assert [m.text for m in got] == ["x", "y", "z"]
    with pytest.raises(CorruptState, match="not all present"):
        decode_tail(rows[:2], 0, 3, ("u", "s", "k"))


async def test_direct_and_transaction_paths_write_the_same_rows(store) -> None:
    """The direct path (asyncpg / sqlite3) writes exactly what the SQLAlchemy transaction
    path writes, timestamps included (read back through SQLAlchemy's types), and each path
    reads what the other wrote."""
    prefix = store.tables.names.prefix
    old = SQLAgentStateStore(store.engine, table_prefix=prefix, one_statement_appends=False)
    if store.engine.dialect.name == "sqlite":  # the URL-made store: the file's own thread
        old = SQLAgentStateStore(
            str(store.engine.url), table_prefix=prefix, one_statement_appends=False
        )
    try:
        for writer, sid in ((store, "new"), (old, "old")):
            state = AgentState(sid, "u", summary="s")
            state.context.extend([Msg.user("a"), Msg.assistant("b")])
            assert await writer.save_if_version("u", sid, state, 0) == 1
            got = await writer.get_versioned("u", sid)
            got.state.context.extend([Msg.user("c"), Msg.assistant("d")])
            assert await writer.save_if_version("u", sid, got.state, 1) == 2
        for reader, sid in ((store, "old"), (old, "new")):
            got = await SQLAgentStateStore(store.engine, table_prefix=prefix).get_versioned(
                "u", sid
            )
            assert got.version == 2 and _texts(got.state) == ["a", "b", "c", "d"]
            assert _texts((await reader.get_versioned("u", sid)).state) == ["a", "b", "c", "d"]
        t = store.tables
        async with store.engine.connect() as conn:
            slots = {
                r.session_id: r
                for r in await conn.execute(
                    select(t.slots).where(t.slots.c.user_id == "u").order_by(t.slots.c.session_id)
                )
            }
            msgs = {
                sid: [
                    (r.end_seq, r.n, r.body)
                    for r in await conn.execute(
                        select(t.chunks)
                        .where(t.chunks.c.slot_hash == slot_hash(sid, "agent_state"))
                        .order_by(t.chunks.c.end_seq)
                    )
                ]
                for sid in ("new", "old")
            }
    finally:
        await old.aclose()
    new, prev = slots["new"], slots["old"]
    assert (new.version, new.message_count, new.state_key) == (2, 4, "agent_state")
    assert (prev.version, prev.message_count) == (2, 4)
    assert new.head.replace('"new"', '"old"') == prev.head
    assert [m[:2] for m in msgs["new"]] == [m[:2] for m in msgs["old"]] == [(2, 2), (4, 2)]
    assert [m[2].count("\n") for m in msgs["new"]] == [m[2].count("\n") for m in msgs["old"]]
    for row in (new, prev):
        assert isinstance(row.created_at, datetime) and isinstance(row.updated_at, datetime)
        assert row.created_at <= row.updated_at


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_direct_path_off_sends_everything_through_sqlalchemy(dialect, tmp_path) -> None:
    """direct_path=False: cursor events see every data statement (for instrumentation)."""
    async with fresh_store(dialect, tmp_path, direct_path=False) as store:
        seen: list[str] = []

        def on(conn, cursor, statement, parameters, context, executemany) -> None:
            seen.append(statement.split()[0].upper())

        event.listen(store.data_engine, "before_cursor_execute", on)
        try:
            state = AgentState("s", "u")
            state.context.append(Msg.user("a"))
            await store.save_if_version("u", "s", state, 0)
            got = await store.get_versioned("u", "s")
            got.state.context.append(Msg.user("b"))
            await store.save_if_version("u", "s", got.state, 1)
            assert _texts((await store.get_versioned("u", "s")).state) == ["a", "b"]
        finally:
            event.remove(store.data_engine, "before_cursor_execute", on)
        assert seen.count("SELECT") >= 2 and "UPDATE" in seen and "INSERT" in seen, seen
