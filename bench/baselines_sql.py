"""Physical limits for the SQL store on this machine (workload.md, "Physical limits").

    .venv/bin/python bench/baselines_sql.py [--pg URL] [--sqlite PATH] [--iters 50]

For a 4,000-message history (the end of W1) it times, side by side:
  * full rewrite: ``UPDATE t SET doc = <whole history as JSONB/TEXT>`` (one row per session),
  * append: ``INSERT`` of the 4 messages of one agent call (one row per message),
  * the floor of a correct warm LEGACY call, no framework, the same driver (asyncpg;
    sqlite3): the version check (``SELECT version``) and a checked append (PostgreSQL: one
    writable CTE, ``UPDATE ... WHERE version = $seen`` bumping it and the 4-row ``INSERT``
    only if it did; SQLite: the same in one ``BEGIN IMMEDIATE`` transaction): two round
    trips, as the store's call makes (docs/stores/sql.md, "What a call costs", says why two),
  * beside it, interleaved (one of each in turn), the floor of an EVENT_LOG W1 call: the
    acquire and 4 fenced commits as the bare statements the SQL session log runs (its own
    SQL text, taken from ``log_fast``/``log_sqlite``; the 4 commits' bytes of a real W1 call,
    recorded on the memory log), same driver, no framework (``floor_event_log``),
  * the store itself: ``save_if_version`` appending 4 messages at 4,000, and a warm and a cold
    ``get_versioned`` (warm = this instance already holds the history; cold = a new instance),
  * the store's warm LEGACY call (a warm ``get_versioned``, then ``save_if_version``
    appending the 4 messages of a W1 call at 4,000) interleaved round by round with the
    LEGACY floor above on its own tables (``*_interleaved``): the ratio of the same sitting.
A design that rewrites the whole history pays the first on every call; one that appends pays
the second. Medians in milliseconds, client CPU (``time.process_time``) beside each in
``*_cpu_ms``. Never run in CI; never asserts timings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
from hookagent.codec import encode_msg
from hookagent.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_agent, session_log

HISTORY = 4000


def call_messages(n: int) -> list[Msg]:
    """The 4 messages of one workload call (200-character tool and final texts)."""
    return [
        Msg.user(f"question {n}: " + "q" * 40),
        Msg.assistant([ToolUseBlock(f"call-{n}", "lookup", {"key": n})]),
        Msg("tool", [ToolResultBlock(f"call-{n}", "lookup", (TextBlock("t" * 200),), "success")]),
        Msg.assistant("a" * 200),
    ]


def history(calls: int) -> list[Msg]:
    return [m for n in range(calls) for m in call_messages(n)]


def med(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 3)


CPU: dict[str, float] = {}
"""Client CPU (ms, median) per repetition, by label, of the last ``timed`` run."""


async def timed(fn: Callable[[], Awaitable[Any]], iters: int, label: str = "") -> float:
    out, cpu = [], []
    for _ in range(iters):
        c, s = time.process_time(), time.perf_counter()
        await fn()
        out.append(time.perf_counter() - s)
        cpu.append(time.process_time() - c)
    if label:
        CPU[label] = med(cpu)
    return med(out)


async def floors(
    legacy: Callable[[], Awaitable[Any]], log: Callable[[], Awaitable[Any]], iters: int
) -> dict[str, Any]:
    """The LEGACY floor (check + checked append) and the EVENT_LOG floor (acquire + 4 fenced
    commits), one of each in turn: the machine's load hits both alike. Medians, ms."""
    wall: dict[str, list[float]] = {"legacy": [], "log": []}
    cpu: dict[str, list[float]] = {"legacy": [], "log": []}
    for _ in range(iters):
        for name, fn in (("legacy", legacy), ("log", log)):
            c, s = time.process_time(), time.perf_counter()
            await fn()
            wall[name].append(time.perf_counter() - s)
            cpu[name].append(time.process_time() - c)
    out = {
        "floor_check_and_append_ms": med(wall["legacy"]),
        "floor_check_and_append_cpu_ms": med(cpu["legacy"]),
        "floor_event_log_ms": med(wall["log"]),
        "floor_event_log_cpu_ms": med(cpu["log"]),
    }
    out["floor_event_log_over_legacy"] = round(
        out["floor_event_log_ms"] / out["floor_check_and_append_ms"], 2
    )
    return out


async def w1_commits() -> list[tuple[bytes, str, int, int]]:
    """(data, digest, events, checkpoint index or -1) of the 4 commits of a warm W1 call on
    the memory log (the bench's agent, call 3): the bytes the SQL log writes for one."""
    from bench_agent import one_call
    from hookagent.sessionlog import CHECKPOINT
    from hookagent.sessionlog.rules import encode_commit
    from session_log import config_for

    config = config_for("log", "memory://floor")
    log = await (await config.kernel.store()).log()
    seen: list[tuple[bytes, str, int, int]] = []
    commit = log.commit

    async def recording(writer: Any, batch_id: str, expected: int, events: Any, **kw: Any) -> Any:
        data, digest = encode_commit(events)
        cps = [i for i, e in enumerate(events) if e.type == CHECKPOINT]
        seen.append((data, digest, len(events), cps[-1] if cps else -1))
        return await commit(writer, batch_id, expected, events, **kw)

    log.commit = recording
    for n in (1, 2, 3):
        seen.clear()
        await one_call(config, "u", "s", n)
    await config.aclose()
    if len(seen) != 4:
        raise RuntimeError(f"a W1 call made {len(seen)} commits, not 4")
    return list(seen)


async def pg_log_floor(
    conn: asyncpg.Connection, url: str, schema: str
) -> Callable[[], Awaitable[None]]:
    """The acquire and 4 commit statements of ``log_fast`` on the log's own tables (made by
    ``SqlSessionLog``), sent by asyncpg with the parameters the log binds."""
    from hookagent_store_sql import SqlSessionLog
    from hookagent_store_sql.log_fast import FastStatements
    from hookagent_store_sql.log_pg import numbered
    from hookagent_store_sql.log_schema import id_hash

    log = SqlSessionLog(url, schema=schema, table_prefix="floor_")
    await log.release(await log.acquire("u", "s", "floor", 600))  # the head row exists
    prep = log.engine.dialect.identifier_preparer
    fast = FastStatements(log.tables, prep, clock=True)
    await log.aclose()
    acquire, names_a = numbered(fast.acquire)
    commit, names_c = numbered(fast.commit[False])
    batches = await w1_commits()
    base = {"u": "u", "s": "s", "o": "floor", "oh": id_hash("floor"), "lease": 600.0}
    n = [0]

    async def call() -> None:
        got = await conn.fetchrow(acquire, *[base[k] for k in names_a])
        if got is None:
            raise RuntimeError("the floor's acquire changed no row")
        seq, epoch = got[0], got[1]
        for data, digest, count, cp in batches:
            n[0] += 1
            b = f"floor-{n[0]}"
            p = {**base, "epoch": epoch, "expected": seq, "first": seq + 1}
            p.update(last=seq + count, cp=seq + 1 + cp if cp >= 0 else 0, d=digest, data=data)
            p.update(b=b, bh=id_hash(b))
            row = await conn.fetchrow(commit, *[p[k] for k in names_c])
            if row is None:
                raise RuntimeError("the floor's commit changed no row")
            seq = row[0]

    return call


async def sqlite_log_floor(
    path: Path,
) -> tuple[sqlite3.Connection, Callable[[], Awaitable[None]]]:
    """``log_sqlite``'s transactions (the acquire unsynced, 4 synced commits of BEGIN
    IMMEDIATE, the head's UPDATE ... RETURNING, the commit's INSERT, COMMIT) on the log's
    own tables, by sqlite3."""
    from hookagent_store_sql import SqlSessionLog
    from hookagent_store_sql.log_schema import id_hash
    from hookagent_store_sql.log_sqlite import SqliteLogFast
    from hookagent_store_sql.runner import ThreadRunner

    log = SqlSessionLog(f"sqlite+aiosqlite:///{path}", table_prefix="floor_")
    await log.release(await log.acquire("u", "s", "floor", 600))
    runner = log._runner
    assert isinstance(runner, ThreadRunner)  # a log opened from a URL
    stmts = SqliteLogFast(runner, log.tables, log.engine.dialect.identifier_preparer, "FULL")
    await log.aclose()
    batches = await w1_commits()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=FULL")
    oh, n = id_hash("floor"), [0]

    async def call() -> None:
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("BEGIN IMMEDIATE")
        got = db.execute(stmts.acquire_sql, ("u", "s", "floor", oh, time.time(), 600.0)).fetchall()
        db.execute("COMMIT")
        db.execute("PRAGMA synchronous=FULL")
        seq, epoch = got[0][0], got[0][1]
        for data, digest, count, cp in batches:
            n[0] += 1
            b, last = f"floor-{n[0]}", seq + count
            bh = id_hash(b)
            db.execute("BEGIN IMMEDIATE")
            args = ("u", "s", "floor", oh, time.time(), epoch, seq, last, b, bh)
            rows = db.execute(stmts.commit_sql[False], (*args, seq + 1 + cp if cp >= 0 else 0))
            if len(rows.fetchall()) != 1:
                raise RuntimeError("the floor's commit changed no row")
            db.execute(stmts.insert_sql, ("u", "s", seq + 1, last, bh, b, digest, data))
            db.execute("COMMIT")
            seq = last

    return db, call


async def drop_store(store: Any, prefix: str) -> None:
    """The bench store's tables (migration 4's view first), then the store closed."""
    async with store.engine.begin() as conn:
        await conn.exec_driver_sql(f"DROP VIEW IF EXISTS {prefix}message_rows")
        tables = ("chunks", "messages", "slots", "fences", "schema_migrations")
        for t in (*tables, "log_seals", "log_commits", "log_heads"):  # its migrations make all
            await conn.exec_driver_sql(f"DROP TABLE IF EXISTS {prefix}{t}")
    await store.aclose()


async def pg_check_append(
    conn: asyncpg.Connection, schema: str, new: list[str]
) -> tuple[str, Callable[[], Awaitable[None]]]:
    """The floor of a correct warm call on asyncpg: its tables in ``schema`` (made here), the
    version check's SQL, and the call (the check, then the checked append's writable CTE)."""
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS {schema}.rows (u text, s text, seq int, body text, "
        "PRIMARY KEY (u, s, seq))"
    )
    await conn.execute(
        f"CREATE TABLE {schema}.slot (u text, s text, version int8, PRIMARY KEY (u, s))"
    )
    await conn.execute(f"INSERT INTO {schema}.slot VALUES ('u', 's', 1)")
    seq = [10 * HISTORY]
    checked = (
        f"WITH up AS (UPDATE {schema}.slot SET version = version + 1 "
        "WHERE u = 'u' AND s = 's' AND version = $1 RETURNING version), "
        f"ins AS (INSERT INTO {schema}.rows SELECT 'u', 's', $2 + i - 1, b "
        "FROM up, unnest($3::text[]) WITH ORDINALITY AS t(b, i)) "
        "SELECT version FROM up"
    )
    check_sql = f"SELECT version FROM {schema}.slot WHERE u = 'u' AND s = 's'"

    async def check_append() -> None:
        seen = await conn.fetchval(check_sql)
        base = seq[0]
        seq[0] += 4
        if await conn.fetchval(checked, seen, base, new) is None:
            raise RuntimeError("the floor's checked append lost its version")

    return check_sql, check_append


async def pg_raw(dsn: str, iters: int) -> dict[str, Any]:
    msgs = [encode_msg(m).decode() for m in history(HISTORY // 4)]
    doc = "[" + ",".join(msgs) + "]"
    new = [encode_msg(m).decode() for m in call_messages(10**6)]
    schema = f"bsql_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}")
        await conn.execute(f"CREATE TABLE {schema}.blob (id int PRIMARY KEY, doc jsonb)")
        await conn.execute(
            f"CREATE TABLE {schema}.rows (u text, s text, seq int, body text, "
            "PRIMARY KEY (u, s, seq))"
        )
        await conn.execute(f"INSERT INTO {schema}.blob VALUES (1, $1::jsonb)", doc)
        check_sql, check_append = await pg_check_append(conn, schema, new)
        seq = [HISTORY]

        async def check() -> None:
            await conn.fetchval(check_sql)

        async def rewrite() -> None:
            await conn.execute(f"UPDATE {schema}.blob SET doc = $1::jsonb WHERE id = 1", doc)

        async def append() -> None:
            base = seq[0]
            seq[0] += 4
            async with conn.transaction():
                await conn.executemany(
                    f"INSERT INTO {schema}.rows VALUES ('u', 's', $1, $2)",
                    [(base + i, b) for i, b in enumerate(new)],
                )

        url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
        log_call = await pg_log_floor(conn, url, schema)
        return {
            "doc_bytes": len(doc.encode()),
            "update_full_jsonb_ms": await timed(rewrite, iters),
            "insert_4_rows_ms": await timed(append, iters, "insert"),
            "insert_4_rows_cpu_ms": CPU["insert"],
            "floor_check_ms": await timed(check, iters, "check"),
            "floor_check_cpu_ms": CPU["check"],
            **await floors(check_append, log_call, iters),
        }
    finally:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        await conn.close()


SQLITE_CHECK = "SELECT version FROM slot WHERE u = 'u' AND s = 's'"


def sqlite_check_append(
    db: sqlite3.Connection, seq: list[int], new: list[str]
) -> Callable[[], Awaitable[None]]:
    """The floor of a correct warm call on sqlite3 (shared with probe_sql_floor.py): the
    version check, then ``BEGIN IMMEDIATE``, the compare-and-set ``UPDATE``, the 4 rows,
    ``COMMIT``. ``seq`` holds the next row's index and moves by 4 a call."""

    async def check_append() -> None:
        (seen,) = db.execute(SQLITE_CHECK).fetchone()
        base = seq[0]
        seq[0] += 4
        db.execute("BEGIN IMMEDIATE")
        up = db.execute(
            "UPDATE slot SET version = version + 1 WHERE u = 'u' AND s = 's' AND version = ?",
            (seen,),
        )
        if up.rowcount != 1:
            db.execute("ROLLBACK")
            raise RuntimeError("the floor's checked append lost its version")
        db.executemany(
            "INSERT INTO rows VALUES ('u', 's', ?, ?)", [(base + i, b) for i, b in enumerate(new)]
        )
        db.execute("COMMIT")

    return check_append


async def sqlite_raw(path: Path, iters: int) -> dict[str, Any]:
    msgs = [encode_msg(m).decode() for m in history(HISTORY // 4)]
    doc = "[" + ",".join(msgs) + "]"
    new = [encode_msg(m).decode() for m in call_messages(10**6)]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE blob (id INTEGER PRIMARY KEY, doc TEXT)")
    db.execute("CREATE TABLE rows (u TEXT, s TEXT, seq INT, body TEXT, PRIMARY KEY (u, s, seq))")
    db.execute("INSERT INTO blob VALUES (1, ?)", (doc,))
    db.execute("CREATE TABLE slot (u TEXT, s TEXT, version INT, PRIMARY KEY (u, s))")
    db.execute("INSERT INTO slot VALUES ('u', 's', 1)")
    seq = [HISTORY]
    check_sql = SQLITE_CHECK

    async def check() -> None:
        db.execute(check_sql).fetchone()

    check_append = sqlite_check_append(db, seq, new)

    async def rewrite() -> None:
        db.execute("UPDATE blob SET doc = ? WHERE id = 1", (doc,))

    async def append() -> None:
        base = seq[0]
        seq[0] += 4
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT INTO rows VALUES ('u', 's', ?, ?)", [(base + i, b) for i, b in enumerate(new)]
        )
        db.execute("COMMIT")

    log_db, log_call = await sqlite_log_floor(path.with_name("log-floor.db"))
    try:
        return {
            "doc_bytes": len(doc.encode()),
            "update_full_text_ms": await timed(rewrite, iters),
            "insert_4_rows_ms": await timed(append, iters, "insert"),
            "insert_4_rows_cpu_ms": CPU["insert"],
            "floor_check_ms": await timed(check, iters, "check"),
            "floor_check_cpu_ms": CPU["check"],
            **await floors(check_append, log_call, iters),
        }
    finally:
        db.close()
        log_db.close()


async def through_store(url: str, prefix: str, iters: int) -> dict[str, Any]:
    store = SQLAgentStateStore(url, table_prefix=prefix)
    try:
        state = AgentState("s", "u")
        state.context.extend(history(HISTORY // 4))
        version = await store.save_if_version("u", "s", state, 0)
        n = [HISTORY]

        async def save4() -> None:
            nonlocal version
            state.context.extend(call_messages(n[0]))
            n[0] += 1
            version = await store.save_if_version("u", "s", state, version)

        async def cycle() -> None:  # what a warm call does: load, then save 4 more
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            got.state.context.extend(call_messages(n[0]))
            n[0] += 1
            await store.save_if_version("u", "s", got.state, got.version)

        async def warm() -> None:
            await store.get_versioned("u", "s")

        async def cold() -> None:
            fresh = SQLAgentStateStore(store.engine, table_prefix=prefix)
            await fresh.get_versioned("u", "s")

        out = {
            "save_append_4_at_4000_ms": await timed(save4, iters, "save"),
            "save_append_4_at_4000_cpu_ms": CPU["save"],
            "load_warm_ms": await timed(warm, iters, "warm"),
            "load_warm_cpu_ms": CPU["warm"],
        }
        out["load_and_save_ms"] = await timed(cycle, iters, "cycle")
        out["load_and_save_cpu_ms"] = CPU["cycle"]
        out["load_cold_4000_ms"] = await timed(cold, max(3, iters // 10))
        return out
    finally:
        await drop_store(store, prefix)


async def interleaved(
    url: str, prefix: str, floor: Callable[[], Awaitable[None]], iters: int
) -> dict[str, Any]:
    """The store's warm LEGACY call (warm ``get_versioned``, then ``save_if_version`` of the 4
    messages of a W1 call, at 4,000) and ``floor``, one of each in turn (as
    baselines_redis.py's ``interleaved``): medians, ms, and the store's over the floor's."""
    store = SQLAgentStateStore(url, table_prefix=prefix)
    try:
        state = AgentState("s", "u")
        state.context.extend(history(HISTORY // 4))
        await store.save_if_version("u", "s", state, 0)
        await store.get_versioned("u", "s")  # warm: this instance holds the history
        n = [HISTORY]

        async def call() -> None:
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            got.state.context.extend(call_messages(n[0]))
            n[0] += 1
            await store.save_if_version("u", "s", got.state, got.version)

        fns = {"store": call, "floor": floor}
        wall: dict[str, list[float]] = {k: [] for k in fns}
        cpu: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(iters):
            for k, fn in fns.items():
                c, t = time.process_time(), time.perf_counter()
                await fn()
                wall[k].append(time.perf_counter() - t)
                cpu[k].append(time.process_time() - c)
        out = {f"{k}_ms": med(wall[k]) for k in fns}
        out.update({f"{k}_cpu_ms": med(cpu[k]) for k in fns})
        out["store_over_floor"] = round(out["store_ms"] / out["floor_ms"], 2)
        out["store_over_floor_cpu"] = round(out["store_cpu_ms"] / max(out["floor_cpu_ms"], 1e-3), 2)
        return out
    finally:
        await drop_store(store, prefix)


async def pg_interleaved(dsn: str, prefix: str, iters: int) -> dict[str, Any]:
    new = [encode_msg(m).decode() for m in call_messages(10**6)]
    schema = f"bsql_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}")
        _, floor = await pg_check_append(conn, schema, new)
        url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
        return await interleaved(url, f"{prefix}i_", floor, iters)
    finally:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        await conn.close()


async def sqlite_interleaved(tmp: Path, prefix: str, iters: int) -> dict[str, Any]:
    new = [encode_msg(m).decode() for m in call_messages(10**6)]
    db = sqlite3.connect(tmp / "floor-i.db", isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(
            "CREATE TABLE rows (u TEXT, s TEXT, seq INT, body TEXT, PRIMARY KEY (u, s, seq))"
        )
        db.execute("CREATE TABLE slot (u TEXT, s TEXT, version INT, PRIMARY KEY (u, s))")
        db.execute("INSERT INTO slot VALUES ('u', 's', 1)")
        floor = sqlite_check_append(db, [HISTORY], new)
        url = f"sqlite+aiosqlite:///{tmp / 'store-i.db'}"
        return await interleaved(url, prefix, floor, iters)
    finally:
        db.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--sqlite", default=None, help="directory for the SQLite files (default tmp)")
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    prefix = f"bsql_{uuid.uuid4().hex[:8]}_"
    out: dict[str, Any] = {"history_messages": HISTORY, "iters": a.iters}
    out["postgresql_raw"] = await pg_raw(a.pg, a.iters)
    pg_url = a.pg.replace("postgresql://", "postgresql+asyncpg://", 1)
    out["postgresql_store"] = await through_store(pg_url, prefix, a.iters)
    out["postgresql_interleaved"] = await pg_interleaved(a.pg, prefix, a.iters)
    with tempfile.TemporaryDirectory(dir=a.sqlite) as tmp:
        out["sqlite_raw"] = await sqlite_raw(Path(tmp) / "raw.db", a.iters)
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'store.db'}"
        out["sqlite_store"] = await through_store(url, prefix, a.iters)
        out["sqlite_interleaved"] = await sqlite_interleaved(Path(tmp), prefix, a.iters)
    for db in ("postgresql", "sqlite"):  # the store's load + save against both floors
        raw, store = out[f"{db}_raw"], out[f"{db}_store"]
        out[f"{db}_load_and_save_over"] = {
            "insert_4_rows": round(store["load_and_save_ms"] / raw["insert_4_rows_ms"], 2),
            "check_and_append": round(
                store["load_and_save_ms"] / raw["floor_check_and_append_ms"], 2
            ),
            "cpu_insert_4_rows": round(
                store["load_and_save_cpu_ms"] / max(raw["insert_4_rows_cpu_ms"], 1e-3), 2
            ),
            "cpu_check_and_append": round(
                store["load_and_save_cpu_ms"] / max(raw["floor_check_and_append_cpu_ms"], 1e-3),
                2,
            ),
        }
    out["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
