"""SQLite's one-transaction commit and acquire (log_sqlite) and its unsynced lease changes;
PostgreSQL's one statement sent by asyncpg (log_pg). Statements are counted with sqlite3's
trace callback (every statement SQLite runs, whoever sends it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import LeaseHeld, LogCorrupt, LogFenced, StalePrefix
from hookagent.sessionlog import LogEvent
from hookagent_store_sql import SqlSessionLog
from hookagent_store_sql.runner import ThreadRunner
from logenv import another_handle, fresh_log, plant_orphan
from sqlalchemy import event

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def events(tag: str, n: int = 2) -> list[LogEvent]:
    return [LogEvent("message/appended", {"i": i}, event_id=f"{tag}-{i}") for i in range(n)]


def traced(log: SqlSessionLog) -> list[str]:
    """Every statement SQLite runs on the log's connections from now on (new connections)."""
    runner = log._runner
    assert isinstance(runner, ThreadRunner)
    seen: list[str] = []

    def on_connect(conn: Any, _record: Any) -> None:
        conn.set_trace_callback(lambda sql: seen.append(" ".join(sql.split())))

    event.listen(runner.engine, "connect", on_connect)
    runner.engine.dispose()  # the pooled connections are remade, traced
    return seen


def verbs(seen: list[str]) -> list[str]:
    return [
        s.split()[0] + (" " + s.split()[1] if s.startswith(("BEGIN", "PRAGMA")) else "")
        for s in seen
    ]


async def test_a_warm_commit_is_one_update_returning_and_one_insert(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        await log.commit(w, "b0", 0, events("b0"))
        seen = traced(log)
        await log.acquire("u", "s", "run", 60)  # warm up the traced connection
        w = await log.acquire("u", "s", "run", 60)
        seen.clear()
        got = await log.commit(w, "b1", 2, events("b1"))
        assert (got.first_seq, got.last_seq, got.duplicate) == (3, 4, False)
        assert verbs(seen) == ["BEGIN IMMEDIATE", "UPDATE", "INSERT", "COMMIT"], seen
        assert "RETURNING" in seen[1]
        assert got.head == await log.head("u", "s")
        assert [e.event_id for e in await log.read_after("u", "s", 2)] == ["b1-0", "b1-1"]


async def test_lease_changes_run_unsynced_and_commits_synced(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path) as log:
        await log.release(await log.acquire("u", "s", "run", 60))  # the head row exists
        seen = traced(log)
        w = await log.acquire("u", "s", "run", 60)
        w = await log.renew(w, 120)
        await log.commit(w, "b0", 0, events("b0"))
        assert await log.release(w)
        joined = verbs(seen)
        lowered = [i for i, v in enumerate(joined) if v == "PRAGMA synchronous"]
        # acquire, renew, release: lowered before BEGIN and restored after COMMIT
        assert [seen[i].split("=")[1].strip() for i in lowered] == ["NORMAL", "FULL"] * 3
        commit_at = next(i for i, s in enumerate(seen) if s.startswith("INSERT"))
        level = [seen[i].split("=")[1].strip() for i in lowered if i < commit_at][-1]
        assert level == "FULL"  # the commit ran synced
        runner = log._runner
        assert isinstance(runner, ThreadRunner)

        def level_now() -> int:
            with runner.engine.connect() as conn:
                return int(conn.exec_driver_sql("PRAGMA synchronous").scalar_one())

        assert await runner.call(level_now) == 2  # FULL: nothing left lowered in the pool


async def test_a_refused_acquire_restores_the_level(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path) as log:
        await log.acquire("u", "s", "run", 60)
        seen = traced(log)
        with pytest.raises(LeaseHeld):
            await log.acquire("u", "s", "other", 60)
        levels = [s.split("=")[1].strip() for s in seen if s.startswith("PRAGMA synchronous")]
        assert levels and levels[-1] == "FULL" and levels.count("NORMAL") == levels.count("FULL")


async def test_synchronous_normal_configured_changes_no_level(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path, sqlite_synchronous="NORMAL") as log:
        await log.release(await log.acquire("u", "s", "run", 60))
        seen = traced(log)
        w = await log.acquire("u", "s", "run", 60)
        await log.commit(w, "b0", 0, events("b0"))
        assert not any(s.startswith("PRAGMA synchronous") for s in seen[1:]), seen


async def test_what_the_one_transaction_refuses_takes_the_locked_path(tmp_path: Path) -> None:
    """A duplicate, a stale prefix, an orphan, an expired lease and a finish: each answered
    as the rules answer it, the fast transaction rolled back first."""
    clock = [1000.0]
    async with fresh_log("sqlite", tmp_path, clock=lambda: clock[0]) as log:
        w = await log.acquire("u", "s", "run", 60)
        first = await log.commit(w, "b0", 0, events("b0"))
        again = await log.commit(w, "b0", 0, events("b0"))
        assert again.duplicate and (again.first_seq, again.last_seq) == (1, 2)
        with pytest.raises(StalePrefix):
            await log.commit(w, "b1", 0, events("b1"))
        await plant_orphan(log, "u", "s", "lost", events("lost", 3))
        got = await log.commit(w, "b1", 2, events("b1", 1))
        assert (got.first_seq, got.last_seq, got.duplicate) == (3, 3, False)
        assert [e.event_id for e in await log.read_after("u", "s", 2)] == ["b1-0"]
        fin = await log.commit(w, "b2", 3, events("b2", 1), finish=True)
        assert fin.head.owner is None and await log.is_sealed("u", "s", "run")
        w2 = await log.acquire("u", "s", "next", 60)
        clock[0] += 61
        with pytest.raises(LogFenced):
            await log.commit(w2, "b3", 4, events("b3", 1))
        assert first.head.seq == 2 and (await log.head("u", "s")).seq == 4


async def test_an_acquire_of_a_new_session_and_a_second_handle(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path) as log:
        other = another_handle(log)
        try:
            w = await other.acquire("u", "new", "run", 60)
            got = await other.commit(w, "b0", 0, events("b0"))
            w2 = await log.acquire("u", "new", "run", 60)
            assert w2.epoch == w.epoch + 1 and w2.seq == got.head.seq == 2
            with pytest.raises(LogFenced):  # the old epoch is fenced off
                await other.commit(w, "b1", 2, events("b1"))
        finally:
            await other.aclose()


async def test_postgresql_sends_the_one_statement_by_asyncpg(tmp_path: Path) -> None:
    async with fresh_log("postgresql", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        sent: list[str] = []
        event.listen(log.engine.sync_engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
        assert log._pg is not None
        w = await log.acquire("u", "s", "run", 60)
        got = await log.commit(w, "b0", 0, events("b0"))
        fin = await log.commit(w, "b1", 2, events("b1", 1), finish=True)
        assert sent == []  # neither went through SQLAlchemy
        assert (got.first_seq, got.last_seq, fin.head.owner) == (1, 2, None)
        assert await log.head("u", "s") == fin.head and await log.is_sealed("u", "s", "run")
        assert [e.event_id for e in await log.read_after("u", "s", 0)] == ["b0-0", "b0-1", "b1-0"]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_the_cold_read_takes_the_drivers_rows(dialect: str, tmp_path: Path) -> None:
    """``read_rows_after`` is one statement sent by the driver itself (no SQLAlchemy row),
    and gives what ``read_after`` gives."""
    async with fresh_log(dialect, tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        for i in range(3):
            await log.commit(w, f"b{i}", 2 * i, events(f"b{i}"))
        sent: list[str] = []
        runner = log._runner
        engine = runner.engine if isinstance(runner, ThreadRunner) else log.engine.sync_engine
        event.listen(engine, "before_cursor_execute", lambda *a: sent.append(a[2]))
        rows = await log.read_rows_after("u", "s", 1)
        assert sent == []
        assert [r[0] for r in rows] == [e.seq for e in await log.read_after("u", "s", 1)]
        assert await log.read_rows_after("u", "new", 0) == []  # no head: no rows


async def test_a_commit_row_whose_data_is_text_fails_closed(tmp_path: Path) -> None:
    async with fresh_log("sqlite", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        await log.commit(w, "b0", 0, events("b0"))
        c = log.engine.dialect.identifier_preparer.format_table(log.tables.commits)
        async with log.engine.begin() as conn:  # SQLite keeps whatever type it is given
            await conn.exec_driver_sql(f"UPDATE {c} SET data = CAST(data AS TEXT)")
        with pytest.raises(LogCorrupt, match="not bytes"):
            await log.read_rows_after("u", "s", 0)
