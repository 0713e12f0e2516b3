"""Physical limits for the SQL store on this machine (workload.md, "Physical limits").

    .venv/bin/python bench/baselines_sql.py [--pg URL] [--sqlite PATH] [--iters 50]

For a 4,000-message history (the end of W1) it times, side by side:
  * full rewrite: ``UPDATE t SET doc = <whole history as JSONB/TEXT>`` (one row per session),
  * append: ``INSERT`` of the 4 messages of one agent call (one row per message),
  * the store itself: ``save_if_version`` appending 4 messages at 4,000, and a warm and a cold
    ``get_versioned`` (warm = this instance already holds the history; cold = a new instance).
A design that rewrites the whole history pays the first on every call; one that appends pays
the second. Medians in milliseconds. Never run in CI; never asserts timings.
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


async def timed(fn: Callable[[], Awaitable[Any]], iters: int) -> float:
    out = []
    for _ in range(iters):
        s = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - s)
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
        seq = [HISTORY]

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
            "insert_4_rows_ms": await timed(append, iters),
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
    seq = [HISTORY]

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
            "insert_4_rows_ms": await timed(append, iters),
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

        async def warm() -> None:
            await store.get_versioned("u", "s")

        async def cold() -> None:
            fresh = SQLAgentStateStore(store.engine, table_prefix=prefix)
            await fresh.get_versioned("u", "s")

        return {
            "save_append_4_at_4000_ms": await timed(save4, iters),
            "load_warm_ms": await timed(warm, iters),
            "load_cold_4000_ms": await timed(cold, max(3, iters // 10)),
        }
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
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
