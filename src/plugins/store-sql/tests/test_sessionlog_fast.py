"""PostgreSQL's one-statement commit and acquire (log_fast) under races: statements that
waited on the head row behind another writer must fall back to the locked transaction and
get its exact answer, never write on a head they did not see."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import OwnerSealed, StalePrefix
from hookagent.sessionlog import LogEvent
from hookagent_store_sql import SqlSessionLog
from hookagent_store_sql.log_schema import id_hash
from logenv import another_handle, fresh_log, plant_orphan
from sqlalchemy import event, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def events(tag: str, n: int = 2) -> list[LogEvent]:
    return [LogEvent("message/appended", {"i": i}, event_id=f"{tag}-{i}") for i in range(n)]


def statements(log: SqlSessionLog) -> list[str]:
    """What the log sends: through SQLAlchemy, and by asyncpg itself (``log_pg``)."""
    seen: list[str] = []
    event.listen(log.engine.sync_engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    direct = log._pg
    if direct is not None:
        run = direct.run

        async def recorded(sql: str, fn: Any) -> Any:
            seen.append(sql)
            return await run(sql, fn)

        direct.run = recorded  # type: ignore[method-assign,assignment]
    return seen


async def outcome(coro: Any) -> Any:
    try:
        return ("ok", await coro)
    except Exception as exc:
        return ("err", type(exc).__name__)


async def blocked(
    log: SqlSessionLog, handles: list[SqlSessionLog], calls: Any, then: str = ""
) -> Any:
    """Run ``calls(handle)`` on every handle while another connection holds the head row's
    lock (so every statement takes its snapshot first, then waits), run ``then`` under the
    lock, commit, and return the outcomes."""
    h = log.engine.dialect.identifier_preparer.format_table(log.tables.heads)
    where = "WHERE user_id='u' AND session_id='s'"
    async with log.engine.connect() as conn:
        await conn.execute(text(f"SELECT seq FROM {h} {where} FOR UPDATE"))
        tasks = [asyncio.create_task(outcome(calls(lg))) for lg in handles]
        await asyncio.sleep(0.5)
        assert not any(t.done() for t in tasks)
        for sql in filter(None, then.split(";")):
            await conn.execute(text(sql.format(h=h, where=where)))
        await conn.commit()
    return await asyncio.gather(*tasks)


async def test_two_commits_on_one_expected_head_exactly_one_lands(tmp_path: Path) -> None:
    async with fresh_log("postgresql", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        await log.commit(w, "b0", 0, events("b0"))
        handles = [await another_handle(log).open() for _ in range(2)]
        sent = [statements(lg) for lg in handles]
        try:
            got = await blocked(
                log, handles, lambda lg: lg.commit(w, f"x{handles.index(lg)}", 2, events("x"))
            )
        finally:
            for lg in handles:
                await lg.aclose()
        assert sorted(r[0] for r in got) == ["err", "ok"], got
        assert ("err", "StalePrefix") in got
        won = next(r[1] for r in got if r[0] == "ok")
        assert (won.first_seq, won.last_seq, won.duplicate) == (3, 4, False)
        assert all(s[0].startswith("WITH") for s in sent)  # both took the one statement
        head = await log.head("u", "s")
        assert head.seq == 4 and head.commit_id == won.head.commit_id == won.head.commit_id
        assert [e.seq for e in await log.read_after("u", "s", 0)] == [1, 2, 3, 4]


async def test_a_batch_retried_while_its_first_attempt_holds_the_row(tmp_path: Path) -> None:
    async with fresh_log("postgresql", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        handles = [await another_handle(log).open() for _ in range(2)]
        try:
            got = await blocked(log, handles, lambda lg: lg.commit(w, "same", 0, events("x")))
        finally:
            for lg in handles:
                await lg.aclose()
        assert all(r[0] == "ok" for r in got), got
        assert sorted(r[1].duplicate for r in got) == [False, True]
        assert {(r[1].first_seq, r[1].last_seq) for r in got} == {(1, 2)}


async def test_a_seal_committed_while_an_acquire_waits_is_seen(tmp_path: Path) -> None:
    """The acquire's seal subquery read a snapshot without the seal; the head row it then
    locked has another ``rev``: it must fall back and answer ``OwnerSealed``."""
    async with fresh_log("postgresql", tmp_path) as log:
        await log.release(await log.acquire("u", "s", "other", 60))  # free: no lease held
        s = log.engine.dialect.identifier_preparer.format_table(log.tables.seals)
        seal = (
            f"INSERT INTO {s} (user_id, session_id, owner_hash, owner) "
            f"VALUES ('u', 's', '{id_hash('late')}', 'late');"
            "UPDATE {h} SET rev = rev + 1 {where}"
        )
        sent = statements(log)
        got = await blocked(log, [log], lambda lg: lg.acquire("u", "s", "late", 30), seal)
        assert got == [("err", OwnerSealed.__name__)]
        assert [s.split()[0] for s in sent][1] == "UPDATE"  # the one statement was tried


async def test_a_renew_between_commits_keeps_the_one_statement(tmp_path: Path) -> None:
    """The statement needs no head cached by the client: a renew through another handle,
    a checkpoint and a finish are all answered from the row it wrote."""
    async with fresh_log("postgresql", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        other = another_handle(log)
        try:
            w2 = await other.renew(w, 300)
        finally:
            await other.aclose()
        sent = statements(log)
        cp = [LogEvent("message/appended"), LogEvent("state/checkpoint", {"base": 1})]
        got = await log.commit(w, "b1", 0, cp)
        assert got.head.lease_until == w2.lease_until and got.head.checkpoint_seq == 2
        fin = await log.commit(w, "b2", 2, events("b2", 1), finish=True)
        assert fin.head.owner is None and fin.head.lease_until == 0.0
        assert fin.head.checkpoint_seq == 2 and fin.head.seq == 3 and fin.head.commit_id == "b2"
        assert await log.is_sealed("u", "s", "run")
        assert [s.split()[0] for s in sent] == ["WITH", "WITH", "SELECT"]
        assert await log.head("u", "s") == fin.head


async def test_an_orphan_sends_the_commit_the_long_way(tmp_path: Path) -> None:
    async with fresh_log("postgresql", tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        await log.commit(w, "b0", 0, events("b0"))
        await plant_orphan(log, "u", "s", "lost", events("lost", 3))
        sent = statements(log)
        got = await log.commit(w, "b1", 2, events("b1", 1))
        assert (got.first_seq, got.last_seq, got.duplicate) == (3, 3, False)
        assert [s.split()[0] for s in sent][:3] == ["WITH", "BEGIN", "SELECT"] or [
            s.split()[0] for s in sent
        ][:2] == ["WITH", "SELECT"], sent
        assert any(s.startswith("DELETE") for s in sent)  # the orphan was dropped
        assert [e.event_id for e in await log.read_after("u", "s", 2)] == ["b1-0"]
        with pytest.raises(StalePrefix):
            await log.commit(w, "b9", 2, events("b9", 1))
