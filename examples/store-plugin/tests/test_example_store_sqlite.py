"""What the conformance suite cannot see: proportional writes and reads, the cache across
processes, corrupt files, a locked or full database, configuration errors."""

from __future__ import annotations

import re
import sqlite3

import pytest
from hookagent import (
    UNCONDITIONAL,
    AgentState,
    CorruptState,
    Fence,
    Fenced,
    InvalidState,
    InvalidStoreArgument,
    Msg,
    StorageDurabilityError,
    StorageFull,
    StoreConfigurationError,
    StoreUnavailable,
)
from hookagent_example_store import ExampleSQLiteStore, open_store
from hookagent_example_store import store as store_module
from hookagent_example_store.db import translate

pytestmark = pytest.mark.anyio


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(tmp_path / "agent.db")


@pytest.fixture
async def store(db_path):
    store = ExampleSQLiteStore(db_path)
    yield store
    await store.aclose()


def raw(db_path: str) -> sqlite3.Connection:
    """A second, plain connection: what another process (or an attacker on disk) sees."""
    return sqlite3.connect(db_path, isolation_level=None)


async def grow(store: ExampleSQLiteStore, n: int, user: str = "u", session: str = "s") -> int:
    """Append n user messages to the slot, through a load and a save at that version."""
    got = await store.get_versioned(user, session)
    state = got.state or AgentState(session, user)
    start = len(state.context)
    state.context.extend(Msg.user(f"m{start + i}") for i in range(n))
    return await store.save_if_version(user, session, state, got.version)


def texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text for m in state.context]


async def test_a_save_writes_only_the_new_messages(store, db_path) -> None:
    await grow(store, 200)
    conn = store._db._conn
    assert conn is not None
    before = conn.total_changes
    await grow(store, 2)
    # 2 message rows inserted + 1 head row updated; the 200 stored rows are not touched
    assert conn.total_changes - before == 3
    got = await store.get_versioned("u", "s")
    state = got.state
    assert state is not None
    state.clear_context()
    state.context.append(Msg.user("fresh"))
    before = conn.total_changes
    await store.save_if_version("u", "s", state, got.version)
    # a clear is a rewrite: 202 rows deleted, 1 inserted, the head updated
    assert conn.total_changes - before == 202 + 1 + 1
    assert texts((await store.get_versioned("u", "s")).state) == ["fresh"]


async def test_a_load_decodes_only_the_new_tail(store, monkeypatch) -> None:
    decoded: list[bytes] = []
    real = store_module.decode_msg

    def counting(body: bytes) -> Msg:
        decoded.append(body)
        return real(body)

    monkeypatch.setattr(store_module, "decode_msg", counting)
    await grow(store, 50)
    await store.get_versioned("u", "s")
    assert decoded == []  # the save cached what it wrote
    await grow(store, 3)
    assert decoded == []
    cold = ExampleSQLiteStore(store.path)
    try:
        await cold.get_versioned("u", "s")
        assert len(decoded) == 53  # a fresh instance reads everything once
        decoded.clear()
        await grow(store, 2)  # another "process" appends
        got = await cold.get_versioned("u", "s")
        assert len(decoded) == 2 and len(texts(got.state)) == 55
    finally:
        await cold.aclose()


async def test_cache_stays_right_when_another_instance_rewrites(store) -> None:
    other = ExampleSQLiteStore(store.path)
    try:
        await grow(store, 4)
        assert texts((await other.get_versioned("u", "s")).state) == ["m0", "m1", "m2", "m3"]
        # the other instance drops the last message and appends one: same count, new content
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        got.state.context.pop()
        got.state.context.append(Msg.user("replaced"))
        await store.save_if_version("u", "s", got.state, got.version)
        assert texts((await other.get_versioned("u", "s")).state)[-1] == "replaced"
        # delete and re-create with as many messages
        await store.delete("u", "s")
        await grow(store, 4)
        fresh = AgentState("s", "u")
        fresh.context.extend(Msg.user(t) for t in "abcd")
        await store.save_if_version("u", "s", fresh, UNCONDITIONAL)
        assert texts((await other.get_versioned("u", "s")).state) == ["a", "b", "c", "d"]
    finally:
        await other.aclose()


async def test_ids_are_stored_encoded_and_bound(store, db_path) -> None:
    hostile = "x') OR 1=1; DROP TABLE heads;--"
    await store.save_if_version(hostile, "Alice/../s", AgentState("Alice/../s", hostile), 0)
    await store.save_if_version("alice", "s", AgentState("s", "alice"), 0)
    with raw(db_path) as conn:
        rows = conn.execute("SELECT user_id, session_id, key FROM heads").fetchall()
    assert len(rows) == 2
    for row in rows:
        for value in row:
            assert re.fullmatch(r"[a-z0-9_~-]+", value), value
    assert (await store.list_session_ids(hostile)).session_ids == ("Alice/../s",)


async def test_same_epoch_other_owner_is_fenced(store) -> None:
    await store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=Fence(3, "a"))
    with pytest.raises(Fenced):
        await store.save_if_version("u", "s", AgentState("s", "u"), 1, fence=Fence(3, "b"))
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 1, fence=Fence(3, "a")) == 2
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 2, fence=Fence(4, "b")) == 3
    with pytest.raises(Fenced):
        await store.save_if_version("u", "s", AgentState("s", "u"), 3, fence=Fence(3, "a"))


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("UPDATE messages SET body = x'7b6e6f74' WHERE seq = 1", CorruptState, "not valid JSON"),
        ("UPDATE messages SET body = '{\"role\": 1}' WHERE seq = 1", InvalidState, "invalid Msg"),
        ("DELETE FROM messages WHERE seq = 1", CorruptState, "the head says 3 messages"),
        ("UPDATE heads SET head = x'00'", CorruptState, "state head"),
        ("UPDATE heads SET msg_count = 4", CorruptState, "the head says 4 messages"),
    ],
)
async def test_corrupt_rows_are_refused_typed(db_path, sql, error, message) -> None:
    writer = ExampleSQLiteStore(db_path)
    await grow(writer, 3)
    await writer.aclose()
    with raw(db_path) as conn:
        conn.execute(sql)
    reader = ExampleSQLiteStore(db_path)
    try:
        with pytest.raises(error, match=message):
            await reader.get_versioned("u", "s")
    finally:
        await reader.aclose()


async def test_not_a_database_is_corrupt_state(tmp_path) -> None:
    path = tmp_path / "agent.db"
    path.write_bytes(b"this is not a sqlite file" * 100)
    store = ExampleSQLiteStore(str(path))
    try:
        with pytest.raises(CorruptState):
            await store.get_versioned("u", "s")
    finally:
        await store.aclose()


async def test_a_locked_database_is_unavailable_and_nothing_is_written(db_path) -> None:
    store = ExampleSQLiteStore(db_path, busy_timeout=0.05)
    try:
        await store.save_if_version("u", "s", AgentState("s", "u", "v1"), 0)
        blocker = raw(db_path)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            with pytest.raises(StoreUnavailable, match="locked") as info:
                await store.save_if_version("u", "s", AgentState("s", "u", "v2"), 1)
            assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        got = await store.get_versioned("u", "s")
        assert got.version == 1 and got.state is not None and got.state.summary == "v1"
        assert await store.save_if_version("u", "s", AgentState("s", "u", "v2"), 1) == 2
    finally:
        await store.aclose()


async def test_a_full_database_is_storage_full_and_keeps_the_old_state(store) -> None:
    await grow(store, 3)
    conn = store._db._conn
    assert conn is not None
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.context.extend(Msg.user("x" * 50_000) for _ in range(4))
    with pytest.raises(StorageFull):
        await store.save_if_version("u", "s", got.state, got.version)
    assert got.state.context.unchanged_prefix == 3  # not marked committed
    after = await store.get_versioned("u", "s")
    assert after.version == got.version and texts(after.state) == ["m0", "m1", "m2"]


async def test_closed_store_is_unavailable(db_path) -> None:
    store = ExampleSQLiteStore(db_path)
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    await store.aclose()
    with pytest.raises(StoreUnavailable, match="closed"):
        await store.get_versioned("u", "s")


async def test_a_newer_schema_is_refused(db_path) -> None:
    with raw(db_path) as conn:
        conn.execute("PRAGMA user_version = 99")
    store = ExampleSQLiteStore(db_path)
    try:
        with pytest.raises(StoreConfigurationError, match="schema version 99"):
            await store.exists("u", "s")
    finally:
        await store.aclose()


async def test_a_missing_directory_is_a_configuration_error(tmp_path) -> None:
    store = open_store(f"example-sqlite://{tmp_path}/no/such/dir/agent.db")
    try:
        with pytest.raises(StoreConfigurationError, match="cannot be opened"):
            await store.exists("u", "s")
    finally:
        await store.aclose()


async def test_bad_arguments_are_refused(store) -> None:
    with pytest.raises(ValueError, match="expected_version"):
        await store.save_if_version("u", "s", AgentState("s", "u"), -1)
    with pytest.raises(ValueError, match="expected_version"):
        await store.save_if_version("u", "s", AgentState("s", "u"), True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        await store.list_session_ids("u", limit=0)
    with pytest.raises(ValueError):
        await store.list_session_ids("u", cursor="Not An Encoded Id")
    with pytest.raises(InvalidStoreArgument, match="Fence"):
        await store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=(1, "a"))  # type: ignore[arg-type]
    assert not await store.exists("u", "s")


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("sqlite:///x.db", {}, "not an example-sqlite URL"),
        ("example-sqlite://", {}, "names no database file"),
        ("example-sqlite:///x.db?mode=ro", {}, "no query"),
        ("example-sqlite:///x.db", {"timeout": 1}, "unknown option 'timeout'"),
        ("example-sqlite:///x.db", {"busy_timeout": 0}, "out of range"),
        ("example-sqlite:///x.db", {"cache_slots": -1}, "out of range"),
        ("example-sqlite:///x.db", {"cache_slots": "8"}, "out of range"),
    ],
)
def test_bad_urls_and_options(url, options, message) -> None:
    with pytest.raises(StoreConfigurationError, match=message):
        open_store(url, **options)


def test_urls_name_the_file() -> None:
    assert open_store("example-sqlite:///tmp/a%20b.db").path == "/tmp/a b.db"
    assert open_store("example-sqlite://rel/agent.db").path == "rel/agent.db"
    assert open_store("example-sqlite://:memory:", cache_slots=0).path == ":memory:"


def sqlite_error(name: str) -> sqlite3.Error:
    exc = sqlite3.OperationalError(f"simulated {name}")
    exc.sqlite_errorname = name  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("SQLITE_FULL", StorageFull),
        ("SQLITE_CORRUPT", CorruptState),
        ("SQLITE_NOTADB", CorruptState),
        ("SQLITE_IOERR_FSYNC", StorageDurabilityError),
        ("SQLITE_CANTOPEN", StoreConfigurationError),
        ("SQLITE_READONLY", StoreConfigurationError),
        ("SQLITE_BUSY", StoreUnavailable),
        ("SQLITE_LOCKED_SHAREDCACHE", StoreUnavailable),
        ("SQLITE_IOERR_READ", StoreUnavailable),
        ("SQLITE_INTERRUPT", StoreUnavailable),
    ],
)
def test_sqlite_errors_are_typed(name, error) -> None:
    got = translate(sqlite_error(name), "/x.db")
    assert type(got) is error and name in str(got)


async def test_a_failed_fsync_poisons_the_store(store) -> None:
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)

    def failing(conn: sqlite3.Connection) -> None:
        raise sqlite_error("SQLITE_IOERR_FSYNC")

    with pytest.raises(StorageDurabilityError) as info:
        await store._db.run(failing)
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    with pytest.raises(StoreUnavailable, match="poisoned"):
        await store.get_versioned("u", "s")
