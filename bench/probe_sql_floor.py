"""The SQL store's warm call against the floor of a correct warm call, for callgrind.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
        .venv/bin/python bench/probe_sql_floor.py --backend sqlite --which store --n 250

Either ``--which floor``: the floor ``bench/baselines_sql.py`` times (a version check, then a
checked append: ``SELECT version``; ``BEGIN IMMEDIATE``, the compare-and-set ``UPDATE``, the
4-row ``executemany``, ``COMMIT`` on ``sqlite3``; the writable CTE on asyncpg), the same
statements as its ``check_append``; or ``--which store``: the store's load + save cycle
(``get_versioned``, 4 messages appended, ``save_if_version``) as its ``through_store``
does. A slot of 4,000 messages, ``--warm`` cycles first, then ``--n`` cycles. Run it with
two values of ``--n`` in fresh processes: (Ir(n2) - Ir(n1)) / (n2 - n1) is the
instructions per call (every thread counted; set-up cancels out). The messages of every
cycle are built before the first (``--max`` of them, whatever ``--n``), so their building
cancels out too. ``--trace`` prints the statements per cycle the driver ran (sqlite only).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from baselines_sql import (  # noqa: E402
    HISTORY,
    call_messages,
    history,
    pg_check_append,
    sqlite_check_append,
)
from hookagent.codec import encode_msg  # noqa: E402
from hookagent.state import AgentState  # noqa: E402
from hookagent_store_sql import SQLAgentStateStore  # noqa: E402

PG = "postgresql://postgres@127.0.0.1:5432/test"


async def sqlite_floor(path: Path, n: int, warm: int, trace: list[str] | None) -> None:
    new = [encode_msg(m).decode() for m in call_messages(10**6)]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE rows (u TEXT, s TEXT, seq INT, body TEXT, PRIMARY KEY (u, s, seq))")
    db.executemany(
        "INSERT INTO rows VALUES ('u', 's', ?, ?)",
        [(i, encode_msg(m).decode()) for i, m in enumerate(history(HISTORY // 4))],
    )
    db.execute("CREATE TABLE slot (u TEXT, s TEXT, version INT, PRIMARY KEY (u, s))")
    db.execute("INSERT INTO slot VALUES ('u', 's', 1)")
    seq = [HISTORY]

    check_append = sqlite_check_append(db, seq, new)  # baselines_sql's, the same statements

    for _ in range(warm):
        await check_append()
    if trace is not None:
        db.set_trace_callback(trace.append)
    for _ in range(n):
        await check_append()
    db.close()


async def pg_floor(n: int, warm: int) -> None:
    import asyncpg

    new = [encode_msg(m).decode() for m in call_messages(10**6)]
    schema = f"bsqlf_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(PG)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}")
        _, check_append = await pg_check_append(conn, schema, new)
        for _ in range(warm + n):
            await check_append()
    finally:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        await conn.close()


async def store_cycles(url: str, n: int, warm: int, most: int, trace: list[str] | None) -> None:
    prefix = f"bsqlf_{uuid.uuid4().hex[:8]}_"
    store = SQLAgentStateStore(url, table_prefix=prefix)
    batches = [call_messages(HISTORY // 4 + i) for i in range(warm + most)]
    try:
        state = AgentState("s", "u")
        state.context.extend(history(HISTORY // 4))
        await store.save_if_version("u", "s", state, 0)

        async def cycle(i: int) -> None:  # through_store's cycle: load, then save 4 more
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            got.state.context.extend(batches[i])
            await store.save_if_version("u", "s", got.state, got.version)

        for i in range(warm):
            await cycle(i)
        if trace is not None:
            held = getattr(getattr(store._direct, "_batch", None), "held", None)
            if held is not None and held._fairy is not None:  # the file thread's connection
                held._fairy.driver_connection.set_trace_callback(trace.append)
            else:  # the pool's one connection (SQLite), before the held one
                raw = store.data_engine.raw_connection()
                raw.driver_connection.set_trace_callback(trace.append)  # type: ignore[union-attr]
                raw.close()
        for i in range(n):
            await cycle(warm + i)
    finally:
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql(f"DROP VIEW IF EXISTS {prefix}message_rows")
            for t in ("chunks", "messages", "slots", "fences", "schema_migrations"):
                await conn.exec_driver_sql(f"DROP TABLE IF EXISTS {prefix}{t}")
        await store.aclose()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backend", choices=("sqlite", "pg"), required=True)
    ap.add_argument("--which", choices=("floor", "store"), required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--max", type=int, default=400, help="cycles' messages built up front")
    ap.add_argument("--trace", action="store_true")
    a = ap.parse_args()
    trace: list[str] | None = [] if a.trace else None
    with tempfile.TemporaryDirectory() as tmp:
        if a.backend == "sqlite" and a.which == "floor":
            await sqlite_floor(Path(tmp) / "floor.db", a.n, a.warm, trace)
        elif a.backend == "sqlite":
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'store.db'}"
            await store_cycles(url, a.n, a.warm, a.max, trace)
        elif a.which == "floor":
            await pg_floor(a.n, a.warm)
        else:
            url = PG.replace("postgresql://", "postgresql+asyncpg://", 1)
            await store_cycles(url, a.n, a.warm, a.max, None)
    if trace is not None:
        print(f"{len(trace) / max(a.n, 1):.2f} statements per cycle")
        for s in trace[: len(trace) // max(a.n, 1)]:
            print("   ", " ".join(s.split())[:100])


if __name__ == "__main__":
    asyncio.run(main())
