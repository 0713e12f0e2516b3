"""Physical limits for the SQL store on this machine (workload.md, "Physical limits").

    .venv/bin/python bench/baselines_sql.py [--pg URL] [--sqlite PATH] [--iters 50]

For a 4,000-message history (the end of W1) it times, side by side:
  * full rewrite: ``UPDATE t SET doc = <whole history as JSONB/TEXT>`` (one row per session),
  * append: ``INSERT`` of the 4 messages of one agent call (one row per message),
  * the floor of a correct warm call, no framework, the same driver (asyncpg; sqlite3): the
    version check (``SELECT version``) and a checked append (PostgreSQL: one writable CTE,
    ``UPDATE ... WHERE version = $seen`` bumping it and the 4-row ``INSERT`` only if it
    did; SQLite: the same in one ``BEGIN IMMEDIATE`` transaction): two round trips, as the
    store's call makes (docs/stores/sql.md, "What a call costs", says why two),
  * the store itself: ``save_if_version`` appending 4 messages at 4,000, and a warm and a cold
    ``get_versioned`` (warm = this instance already holds the history; cold = a new instance).
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
        await conn.execute(
            f"CREATE TABLE {schema}.slot (u text, s text, version int8, PRIMARY KEY (u, s))"
        )
        await conn.execute(f"INSERT INTO {schema}.slot VALUES ('u', 's', 1)")
        seq = [HISTORY]
        checked = (
            f"WITH up AS (UPDATE {schema}.slot SET version = version + 1 "
            "WHERE u = 'u' AND s = 's' AND version = $1 RETURNING version), "
            f"ins AS (INSERT INTO {schema}.rows SELECT 'u', 's', $2 + i - 1, b "
            "FROM up, unnest($3::text[]) WITH ORDINALITY AS t(b, i)) "
            "SELECT version FROM up"
        )
        check_sql = f"SELECT version FROM {schema}.slot WHERE u = 'u' AND s = 's'"

        async def check() -> None:
            await conn.fetchval(check_sql)

        async def check_append() -> None:
            seen = await conn.fetchval(check_sql)
            base = seq[0]
            seq[0] += 4
            if await conn.fetchval(checked, seen, base, new) is None:
                raise RuntimeError("the floor's checked append lost its version")

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

        return {
            "doc_bytes": len(doc.encode()),
            "update_full_jsonb_ms": await timed(rewrite, iters),
            "insert_4_rows_ms": await timed(append, iters, "insert"),
            "insert_4_rows_cpu_ms": CPU["insert"],
            "floor_check_ms": await timed(check, iters, "check"),
            "floor_check_cpu_ms": CPU["check"],
            "floor_check_and_append_ms": await timed(check_append, iters, "floor"),
            "floor_check_and_append_cpu_ms": CPU["floor"],
        }
    finally:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        await conn.close()


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
    check_sql = "SELECT version FROM slot WHERE u = 'u' AND s = 's'"

    async def check() -> None:
        db.execute(check_sql).fetchone()

    async def check_append() -> None:
        (seen,) = db.execute(check_sql).fetchone()
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

    try:
        return {
            "doc_bytes": len(doc.encode()),
            "update_full_text_ms": await timed(rewrite, iters),
            "insert_4_rows_ms": await timed(append, iters, "insert"),
            "insert_4_rows_cpu_ms": CPU["insert"],
            "floor_check_ms": await timed(check, iters, "check"),
            "floor_check_cpu_ms": CPU["check"],
            "floor_check_and_append_ms": await timed(check_append, iters, "floor"),
            "floor_check_and_append_cpu_ms": CPU["floor"],
        }
    finally:
        db.close()


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
        async with store.engine.begin() as conn:
            for t in ("messages", "slots", "fences", "schema_migrations"):
                await conn.exec_driver_sql(f"DROP TABLE IF EXISTS {prefix}{t}")
        await store.aclose()


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
    with tempfile.TemporaryDirectory(dir=a.sqlite) as tmp:
        out["sqlite_raw"] = await sqlite_raw(Path(tmp) / "raw.db", a.iters)
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'store.db'}"
        out["sqlite_store"] = await through_store(url, prefix, a.iters)
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
