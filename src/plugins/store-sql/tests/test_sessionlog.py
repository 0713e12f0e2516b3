"""SqlSessionLog on each dialect: the same answers as the reference (InMemorySessionLog) for
random operation sequences, orphans and missing commits, races on the head row, the
statements each operation sends, and the registered URL schemes."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import LeaseHeld, LogCorrupt, LogFenced, StalePrefix
from hookagent.sessionlog import InMemorySessionLog, LogEvent, open_session_log
from hookagent_store_sql import SqlSessionLog, TableNames
from hookagent_store_sql.runner import ThreadRunner
from logenv import another_handle, fresh_log, plant_head, plant_orphan
from sqlalchemy import event, text
from sqlenv import DIALECTS, drop_tables, unique_name, url_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def batch(batch_id: str, variant: int, n: int) -> list[LogEvent]:
    """The same (batch_id, variant) is the same content; another variant conflicts."""
    kinds = ["message/appended", "state/checkpoint", "tool/result"]
    return [
        LogEvent(
            kinds[(i + variant) % 3],
            {"b": batch_id, "i": i, "v": variant},
            required=i % 2 == 0,
            run_id="r" if i else None,
            event_id=f"{batch_id}-{variant}-{i}",
            occurred_at=float(i),
        )
        for i in range(n)
    ]


async def outcome(coro: Any) -> Any:
    try:
        return ("ok", await coro)
    except Exception as exc:  # the error's type is the answer compared
        return ("err", type(exc).__name__)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_same_answers_as_the_reference(dialect: str, tmp_path: Path) -> None:
    clock = Clock()
    ref = InMemorySessionLog(clock=clock)
    async with fresh_log(dialect, tmp_path, clock=clock) as log:
        rng = random.Random(f"log-{dialect}")
        writers: list[tuple[Any, Any]] = []
        kinds: dict[str, int] = {}
        for step in range(400):
            user, sid = rng.choice(["u", "v"]), rng.choice(["s1", "s2"])
            op = rng.choice(
                ["acquire"] * 3 + ["commit"] * 6 + ["renew", "release", "seal", "is_sealed"]
                + ["read"] * 3 + ["head", "tick", "tick", "list", "delete"]
            )  # fmt: skip
            if op == "delete" and rng.random() < 0.7:
                op = "head"
            if op in ("commit", "renew", "release") and not writers:
                op = "acquire"
            kinds[op] = kinds.get(op, 0) + 1
            pair: tuple[Any, Any] = (None, None)
            if op in ("commit", "renew", "release"):
                pair = writers[-1] if rng.random() < 0.7 else rng.choice(writers[-6:])
            if op == "acquire":
                owner, lease = rng.choice(["a", "b", "c"]), rng.choice([5.0, 50.0, 300.0])
                calls = [b.acquire(user, sid, owner, lease) for b in (ref, log)]
            elif op == "commit":
                w = pair[0]
                seq = (await ref.head(w.user_id, w.session_id)).seq
                expected = seq if rng.random() < 0.75 else rng.choice([seq - 1, seq + 1])
                bid = f"b{rng.randrange(6)}"
                events = batch(bid, 1 if rng.random() < 0.1 else 0, rng.randint(1, 3))
                finish = rng.random() < 0.1
                calls = [
                    b.commit(x, bid, expected, events, finish=finish)
                    for b, x in zip((ref, log), pair, strict=True)
                ]
            elif op == "renew":
                calls = [b.renew(x, 20.0) for b, x in zip((ref, log), pair, strict=True)]
            elif op == "release":
                calls = [b.release(x) for b, x in zip((ref, log), pair, strict=True)]
            elif op in ("seal", "is_sealed"):
                owner = rng.choice(["a", "b", "c"])
                calls = [getattr(b, op)(user, sid, owner) for b in (ref, log)]
            elif op == "read":
                top = (await ref.head(user, sid)).seq
                after, limit = rng.randint(0, top + 1), rng.choice([None, None, 1, 2, 5])
                calls = [b.read_after(user, sid, after, limit) for b in (ref, log)]
            elif op == "tick":
                clock.t += rng.choice([1.0, 10.0, 60.0])
                continue
            elif op == "list":
                cursor = rng.choice([None, "", "s1"])
                calls = [b.list_session_ids(user, limit=1, cursor=cursor) for b in (ref, log)]
            else:
                calls = [getattr(b, op)(user, sid) for b in (ref, log)]
            want, got = await outcome(calls[0]), await outcome(calls[1])
            assert got == want, (step, op, want, got)
            tally = f"{op}:{want[1] if want[0] == 'err' else 'ok'}"
            kinds[tally] = kinds.get(tally, 0) + 1
            if op == "acquire" and want[0] == "ok":
                writers.append((want[1], got[1]))
        print(sorted(kinds.items()))
        for seen in ("commit:ok", "commit:LogFenced", "commit:StalePrefix", "acquire:LeaseHeld"):
            assert kinds.get(seen, 0) >= 3, (seen, kinds)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_orphans_missing_commits_and_tenants(dialect: str, tmp_path: Path) -> None:
    async with fresh_log(dialect, tmp_path) as log:
        w = await log.acquire("alice", "s", "run-1", 30)
        await log.commit(w, "b1", 0, batch("b1", 0, 2))
        await plant_orphan(log, "alice", "s", "lost", batch("lost", 0, 3))
        assert [e.seq for e in await log.read_after("alice", "s", 0)] == [1, 2]  # invisible
        other = another_handle(log)
        try:  # the orphan is not a prior: its batch id commits anew, over it
            got = await other.commit(w, "lost", 2, batch("lost", 1, 1))
            assert (got.first_seq, got.last_seq, got.duplicate) == (3, 3, False)
            events = await other.read_after("alice", "s", 2)
            assert [(e.seq, e.payload["v"]) for e in events] == [(3, 1)]
        finally:
            await other.aclose()
        # the same ids under another user are another log
        assert (await log.head("bob", "s")).seq == 0 and await log.read_after("bob", "s", 0) == []
        with pytest.raises(LogFenced):
            await log.commit(
                type(w)("bob", "s", "run-1", w.epoch, w.lease_until), "x", 0, batch("x", 0, 1)
            )
        assert (await log.list_session_ids("bob")).session_ids == ()
        await plant_head(log, "alice", "s", 7)
        with pytest.raises(LogCorrupt, match="head is at seq 7"):
            await log.read_after("alice", "s", 0)
        assert len(await log.read_after("alice", "s", 0, limit=2)) == 2  # the first page is whole
        assert await log.delete("alice", "s") and not await log.delete("alice", "s")


@pytest.mark.parametrize("dialect", ["postgresql", "mariadb"])
async def test_a_commit_that_waited_for_the_lock_sees_what_the_holder_wrote(
    dialect: str, tmp_path: Path
) -> None:
    """Two commits of one batch wait on the head row; the second must answer "duplicate"
    (its lock statement's snapshot predates the first's commit: it is rerun)."""
    async with fresh_log(dialect, tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        handles = [another_handle(log) for _ in range(2)]
        h = log.tables.heads
        table = log.engine.dialect.identifier_preparer.format_table(h)
        try:
            for lg in handles:
                await lg.head("u", "s")  # migrated and connected
            async with log.engine.connect() as conn:
                await conn.execute(
                    text(f"SELECT seq FROM {table} WHERE user_id='u' AND session_id='s' FOR UPDATE")
                )
                tasks = [
                    asyncio.create_task(lg.commit(w, "same", 0, batch("same", 0, 2)))
                    for lg in handles
                ]
                await asyncio.sleep(0.5)
                assert not any(t.done() for t in tasks)
                await conn.rollback()
            results = await asyncio.gather(*tasks)
        finally:
            for lg in handles:
                await lg.aclose()
        assert sorted(r.duplicate for r in results) == [False, True]
        assert {(r.first_seq, r.last_seq) for r in results} == {(1, 2)}
        assert [e.seq for e in await log.read_after("u", "s", 0)] == [1, 2]


def _verb(sql: str) -> str:
    words = sql.split()
    return "PRAGMA " + words[-1] if words[0] == "PRAGMA" else words[0]


def _count(log: SqlSessionLog, dialect: str) -> list[str]:
    """What each operation sends, one entry per round trip: every statement (first word;
    ``AUTO:`` when its connection is in autocommit, where BEGIN/COMMIT are not sent), and on
    a transaction's connection its BEGIN (PostgreSQL only: the MySQL drivers and SQLite's
    ``BEGIN IMMEDIATE`` statement send none of their own) and COMMIT or ROLLBACK. On SQLite
    the whole operation is one hop into the file's thread, no round trip: there every
    statement SQLite runs is listed (sqlite3's trace callback, whoever sends it; the verb,
    ``PRAGMA`` with its setting). PostgreSQL's statements sent by asyncpg itself (``log_pg``)
    are listed as ``AUTO:`` too (autocommit)."""
    seen: list[str] = []
    runner = log._runner
    if dialect == "sqlite":
        assert isinstance(runner, ThreadRunner)

        def on_connect(conn: Any, _record: Any) -> None:
            conn.set_trace_callback(lambda sql: seen.append(_verb(sql)))

        event.listen(runner.engine, "connect", on_connect)
        runner.engine.dispose()  # the pooled connections are remade, traced
        return seen
    direct = log._pg
    if direct is not None:
        run = direct.run

        async def recorded(sql: str, fn: Any) -> Any:
            seen.append("AUTO:" + sql.split()[0])
            return await run(sql, fn)

        direct.run = recorded  # type: ignore[method-assign,assignment]
    engine = runner.engine if hasattr(runner, "engine") else log.engine.sync_engine

    def auto(conn: Any) -> bool:
        return conn._execution_options.get("isolation_level") == "AUTOCOMMIT"

    def statement(conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        seen.append(("AUTO:" if auto(conn) else "") + sql.split()[0])

    def ends(name: str) -> Any:
        def listener(conn: Any) -> None:
            if not auto(conn) and (name != "BEGIN" or dialect == "postgresql"):
                seen.append(name)

        return listener

    event.listen(engine, "before_cursor_execute", statement)
    for name in ("BEGIN", "COMMIT", "ROLLBACK"):
        event.listen(engine, name.lower(), ends(name))
    return seen


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_statements_per_operation(dialect: str, tmp_path: Path) -> None:
    pg = dialect == "postgresql"
    async with fresh_log(dialect, tmp_path) as log:
        w = await log.acquire("u", "s", "run", 60)
        await log.commit(w, "b0", 0, batch("b0", 0, 1))
        seen = _count(log, dialect)
        await log.commit(w, "b1", 1, batch("b1", 0, 4))
        lite = dialect == "sqlite"
        # SQLite's warm commit: the head's UPDATE ... RETURNING gates the INSERT (log_sqlite)
        if pg:  # the warm commit: one autocommit statement, one round trip
            assert seen == ["AUTO:WITH"], seen
        elif lite:
            assert seen == ["BEGIN", "UPDATE", "INSERT", "COMMIT"], seen
        else:
            assert seen == ["SELECT", "INSERT", "UPDATE", "COMMIT"], seen
        del seen[:]
        with pytest.raises(StalePrefix):  # refused: the locked transaction says why
            await log.commit(w, "b2", 1, batch("b2", 0, 1))
        slow = ["BEGIN", "SELECT", "ROLLBACK"] if pg or lite else ["SELECT", "ROLLBACK"]
        fast = ["AUTO:WITH"] if pg else ["BEGIN", "UPDATE", "ROLLBACK"] if lite else []
        assert seen == [*fast, *slow], seen
        del seen[:]
        await log.commit(w, "b2", 5, batch("b2", 0, 1), finish=True)
        fin = ["INSERT", "UPDATE", "INSERT", "COMMIT"]
        if lite:
            assert seen == ["BEGIN", "UPDATE", "INSERT", "INSERT", "COMMIT"], seen
        else:
            assert seen == (["AUTO:WITH"] if pg else ["SELECT", *fin]), seen
        del seen[:]
        w = await log.acquire("u", "s", "run-2", 60)  # a warm acquire
        assert w.epoch == 2 and w.seq == 6
        if lite:  # a lease change runs unsynced: the level restored after its COMMIT
            unsynced = ["PRAGMA NORMAL", "BEGIN", "UPDATE", "COMMIT", "PRAGMA FULL"]
            assert seen == unsynced, seen
        else:
            assert seen == (["AUTO:UPDATE"] if pg else ["SELECT", "UPDATE", "COMMIT"]), seen
        del seen[:]
        await log.head("u", "s")
        await log.read_after("u", "s", 0)
        await log.read_after("u", "s", 3, limit=2)
        # a read: one statement; elsewhere the driver also sends the ROLLBACK ending its snapshot
        read = ["AUTO:SELECT"] if pg else ["SELECT"] if lite else ["SELECT", "ROLLBACK"]
        assert seen == read * 3, seen


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_registered_for_the_store_schemes(dialect: str, tmp_path: Path) -> None:
    url = url_for(dialect, tmp_path)
    names = TableNames(unique_name("r"))
    log = await open_session_log(f"{url}{'&' if '?' in url else '?'}table_prefix={names.prefix}")
    try:
        assert isinstance(log, SqlSessionLog)
        assert log.locality == ("host" if dialect == "sqlite" else "shared")
        w = await log.acquire("u", "s", "o", 10)
        with pytest.raises(LeaseHeld):
            await log.acquire("u", "s", "p", 10)
        with pytest.raises(StalePrefix):
            await log.commit(w, "b", 3, batch("b", 0, 1))
        assert (await log.commit(w, "b", 0, batch("b", 0, 1))).last_seq == 1
    finally:
        await log.aclose()
        await drop_tables(url, names)
