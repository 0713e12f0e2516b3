"""SQLite group commit (saves queued for the file's thread share one transaction, and each
keeps its own compare-and-set, errors and outcome) and the overlapped cold load."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from hookagent.codec import encode_msg
from hookagent.errors import CorruptState, InvalidState, StoreUnavailable, VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore, slot_hash
from hookagent_store_sql.sqlite_batch import GroupCommit
from hookagent_store_sql.sqlite_cold import CHUNKS
from hookagent_store_sql.sqlite_cold import ROWS as CHUNK
from hookagent_store_sql.sqlite_direct import wrap
from sqlalchemy.exc import OperationalError
from sqlenv import fresh_store, plant_document

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _hold_thread(store: SQLAgentStateStore) -> threading.Event:
    """Occupy the file's thread until the returned event is set, so saves queue up."""
    gate = threading.Event()
    store._runner.submit(lambda: gate.wait(10))
    return gate


async def _release_soon(gate: threading.Event) -> None:
    await asyncio.sleep(0.2)
    gate.set()


async def test_queued_saves_share_commits_and_all_land(tmp_path: Path) -> None:
    async with fresh_store("sqlite", tmp_path) as store:
        states = {}
        for i in range(30):
            state = AgentState(f"s{i}", "u")
            state.context.append(Msg.user(f"first {i}"))
            await store.save_if_version("u", f"s{i}", state, 0)
            states[i] = (await store.get_versioned("u", f"s{i}")).state
        commits: list[str] = []

        def trace(sql: str) -> None:
            if sql == "COMMIT":
                commits.append(sql)

        held = store._direct._batch.held  # the file thread's connection (the direct path's)

        def traced(fn) -> None:
            held.get(store.data_engine).set_trace_callback(fn)

        await store._runner.call(traced, trace)
        try:
            gate = _hold_thread(store)
            for i, state in states.items():
                state.context.append(Msg.assistant(f"second {i}"))
            saves = [store.save_if_version("u", f"s{i}", st, 1) for i, st in states.items()]
            results = await asyncio.gather(*saves, _release_soon(gate))
        finally:
            await store._runner.call(traced, None)
        assert results[:-1] == [2] * 30
        assert 1 <= len(commits) < 30  # batched: fewer commits than saves
        fresh = SQLAgentStateStore(str(store.engine.url), table_prefix=store.tables.names.prefix)
        try:
            for i in range(30):
                got = await fresh.get_versioned("u", f"s{i}")
                assert got.version == 2
                assert [m.text for m in got.state.context] == [f"first {i}", f"second {i}"]
        finally:
            await fresh.aclose()


async def test_two_saves_of_one_slot_in_one_batch_one_wins(tmp_path: Path) -> None:
    async with fresh_store("sqlite", tmp_path) as store:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        a = (await store.get_versioned("u", "s")).state
        b = (await store.get_versioned("u", "s")).state
        a.context.append(Msg.user("from a"))
        b.context.append(Msg.user("from b"))
        gate = _hold_thread(store)
        got = await asyncio.gather(
            store.save_if_version("u", "s", a, 1),
            store.save_if_version("u", "s", b, 1),
            _release_soon(gate),
            return_exceptions=True,
        )
        assert got[0] == 2 and isinstance(got[1], VersionConflict), got
        final = await store.get_versioned("u", "s")
        assert final.version == 2 and [m.text for m in final.state.context] == ["from a"]


async def test_a_failing_save_is_rolled_back_alone(tmp_path: Path) -> None:
    async with fresh_store("sqlite", tmp_path) as store:
        for sid in ("x", "y"):
            await store.save_if_version("u", sid, AgentState(sid, "u"), 0)
        x = (await store.get_versioned("u", "x")).state
        y = (await store.get_versioned("u", "y")).state
        x.context.append(Msg.user("x1"))
        y.context.append(Msg.user("y1"))
        batch = store._direct._batch
        table = store.tables.names.messages

        def bad(conn: sqlite3.Connection) -> bool:
            conn.execute(f"DELETE FROM {table}")  # then fails: must be undone
            raise sqlite3.OperationalError("disk I/O error")

        gate = _hold_thread(store)
        got = await asyncio.gather(
            store.save_if_version("u", "x", x, 1),
            batch.write(bad),
            store.save_if_version("u", "y", y, 1),
            _release_soon(gate),
            return_exceptions=True,
        )
        assert got[0] == 2 and got[2] == 2
        assert isinstance(got[1], OperationalError)
        for sid, text in (("x", "x1"), ("y", "y1")):
            final = await store.get_versioned("u", sid)
            assert [m.text for m in final.state.context] == [text]


class _FailingCommit(sqlite3.Connection):
    def commit(self) -> None:
        raise sqlite3.OperationalError("disk I/O error")


def test_a_failed_commit_makes_every_applied_save_unknown(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
    setup.execute("INSERT INTO t VALUES (1, 0)")
    setup.commit()
    setup.close()
    conn = sqlite3.connect(path, factory=_FailingCommit)
    batch = GroupCommit(None, None, wrap)  # type: ignore[arg-type]

    def applies(c: sqlite3.Connection) -> bool:
        return c.execute("UPDATE t SET v = v + 1 WHERE k = 1").rowcount == 1

    def conflicts(c: sqlite3.Connection) -> bool:
        return c.execute("UPDATE t SET v = 9 WHERE k = 2").rowcount == 1

    out = batch._run(conn, [applies, conflicts, applies])
    assert isinstance(out[0], StoreUnavailable) and "may or may not" in str(out[0])
    assert out[1] is False and isinstance(out[2], StoreUnavailable)
    assert out[0] is not out[2] and out[0].__cause__ is not None
    conn.close()
    assert sqlite3.connect(path).execute("SELECT v FROM t").fetchone() == (0,)  # rolled back


# ---------------------------------------------------------------------- the cold load


async def _seeded(store: SQLAgentStateStore, n: int, chunks: int = 0) -> list[str]:
    """``n`` messages as rows (as versions before migration 4 wrote them), then ``chunks``
    saves of one message each (a chunk each)."""
    state = AgentState("s", "u")
    texts = [f"m{i}" for i in range(n)]
    state.context.extend(Msg.user(t) for t in texts)
    await plant_document(store, "u", "s", "agent_state", state.to_json(), 1)
    for i in range(chunks):
        got = await store.get_versioned("u", "s")
        got.state.context.append(Msg.user(f"c{i}"))
        await store.save_if_version("u", "s", got.state, got.version)
        texts.append(f"c{i}")
    return texts


def _reader(store: SQLAgentStateStore, **kw) -> SQLAgentStateStore:
    """A fresh instance made from the URL: the file's thread, the direct (cold) path; counts
    its ordinary row reads in ``row_reads``."""
    reader = SQLAgentStateStore(str(store.engine.url), table_prefix=store.tables.names.prefix, **kw)
    reader.row_reads = 0  # type: ignore[attr-defined]
    ordinary = reader._read_rows

    async def counted(*args):
        reader.row_reads += 1  # type: ignore[attr-defined]
        return await ordinary(*args)

    reader._read_rows = counted  # type: ignore[method-assign]
    return reader


async def test_the_cold_load_reads_every_chunk_in_order(tmp_path: Path) -> None:
    async with fresh_store("sqlite", tmp_path) as store:
        texts = await _seeded(store, 2 * CHUNK + 7, CHUNKS + 3)  # rows, then 2 chunk pages
        for kw in ({}, {"direct_path": False}):
            reader = _reader(store, **kw)
            try:
                got = await reader.get_versioned("u", "s")
                assert (
                    got.version == 1 + CHUNKS + 3 and [m.text for m in got.state.context] == texts
                )
                assert (await reader.get_versioned("u", "absent")).state is None
                assert reader.row_reads == (0 if not kw else 2)  # the cold path did it all
            finally:
                await reader.aclose()
        stray = Msg.user("past the count")
        async with store.engine.begin() as conn:  # a row past message_count: the count lies
            await conn.execute(
                store.tables.messages.insert(),
                [
                    dict(
                        user_id="u",
                        slot_hash=slot_hash("s", "agent_state"),
                        seq=len(texts),
                        session_id="s",
                        state_key="agent_state",
                        role="user",
                        msg_id=stray.id,
                        body=encode_msg(stray).decode(),
                    )
                ],
            )
        for kw in ({}, {"direct_path": False}):
            reader = _reader(store, **kw)
            try:
                with pytest.raises(CorruptState, match="past them"):
                    await reader.get_versioned("u", "s")
                assert reader.row_reads == 1  # the cold path saw it and stepped aside
            finally:
                await reader.aclose()


async def test_the_cold_load_leaves_a_bad_chunk_to_the_row_read(tmp_path: Path) -> None:
    """A gap or a NUL in a body: the row read decides, with the same typed errors."""
    async with fresh_store("sqlite", tmp_path) as store:
        await _seeded(store, CHUNK + 10)
        t = store.tables
        async with store.engine.begin() as conn:
            await conn.execute(t.messages.delete().where(t.messages.c.seq == CHUNK + 3))
        reader = _reader(store)
        try:
            with pytest.raises(CorruptState, match="not all present"):
                await reader.get_versioned("u", "s")
            assert reader.row_reads == 1  # the cold path stepped aside
        finally:
            await reader.aclose()
        async with store.engine.begin() as conn:
            await conn.execute(
                t.messages.insert(),
                [
                    dict(
                        user_id="u",
                        slot_hash=slot_hash("s", "agent_state"),
                        seq=CHUNK + 3,
                        session_id="s",
                        state_key="agent_state",
                        role="user",
                        msg_id="x",
                        body='{"role": "user", "content": "a\x00b"}',
                    )
                ],
            )
        errors = []
        for kw in ({}, {"direct_path": False}):
            reader = _reader(store, **kw)
            try:
                with pytest.raises((CorruptState, InvalidState)) as info:
                    await reader.get_versioned("u", "s")
                errors.append(type(info.value))
            finally:
                await reader.aclose()
        assert errors[0] is errors[1]  # the same error either way
