"""Load-independent evidence for W2 on a SQL store: per agent call, which save path the SQL
store took and how many statements (round trips) reached the driver.

    .venv/bin/python bench/probe_w2_statements.py --checkout /path/to/checkout --store URL

Run it with each checkout's own interpreter (``<checkout>/.venv/bin/python``): it imports
that checkout's ``bench_agent`` and plugins. W2's shape: ``--sessions`` new sessions x 5
calls, 50 in flight. Counted: SQLite statements by their first word (``sqlite3`` trace
callback), asyncpg calls (``fetch``/``fetchrow``/``execute``/``prepare`` ...), aiomysql
commands by first word, and the store's direct-path / transaction-path entry points. Prints
one JSON object, counts per agent call. Nothing is timed but client CPU (noisy; the counts
are the point).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import sqlite3
import sqlite3.dbapi2
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

COUNTS: collections.Counter[str] = collections.Counter()


def _trace_sqlite() -> None:
    connect = sqlite3.connect

    def traced(*a: Any, **k: Any) -> sqlite3.Connection:
        conn = connect(*a, **k)
        conn.set_trace_callback(lambda sql: COUNTS.update([f"sqlite:{sql.split()[0].upper()}"]))
        return conn

    sqlite3.connect = sqlite3.dbapi2.connect = traced  # type: ignore[assignment]


def _wrap_async(cls: Any, name: str, tag: str) -> None:
    fn = getattr(cls, name)

    @functools.wraps(fn)
    async def counted(*a: Any, **k: Any) -> Any:
        COUNTS.update([tag])
        return await fn(*a, **k)

    setattr(cls, name, counted)


def _trace_drivers() -> None:
    try:
        import asyncpg
        from asyncpg import prepared_stmt

        for n in ("fetch", "fetchrow", "fetchval", "execute", "executemany", "prepare"):
            _wrap_async(asyncpg.Connection, n, f"asyncpg:{n}")
        for n in ("fetch", "fetchrow", "executemany"):
            _wrap_async(prepared_stmt.PreparedStatement, n, f"asyncpg:prepared.{n}")
    except ImportError:
        pass
    try:
        import aiomysql

        command = aiomysql.Connection._execute_command

        async def counted(self: Any, cmd: Any, sql: Any) -> Any:
            text = sql.decode(errors="replace") if isinstance(sql, bytes | bytearray) else str(sql)
            COUNTS.update([f"mysql:{(text.split() or ['?'])[0].upper()}"])
            return await command(self, cmd, sql)

        aiomysql.Connection._execute_command = counted
    except ImportError:
        pass


def _trace_store() -> None:
    from hookagent_store_sql import save, store
    from hookagent_store_sql.pg_direct import PgDirect
    from hookagent_store_sql.sqlite_direct import SqliteDirect

    def count(cls: Any, name: str, tag: str) -> None:
        fn: Callable[..., Any] = getattr(cls, name)
        if asyncio.iscoroutinefunction(fn):
            _wrap_async(cls, name, tag)
            return

        @functools.wraps(fn)
        def counted(*a: Any, **k: Any) -> Any:
            COUNTS.update([tag])
            return fn(*a, **k)

        setattr(cls, name, counted)

    for cls in (PgDirect, SqliteDirect):
        for name in ("load", "append", "create"):
            count(cls, name, f"path:direct.{name}")
    count(SqliteDirect, "load_cold", "path:direct.load_cold")
    count(save.SavePlan, "run", "path:transaction")
    if hasattr(save.SavePlan, "_inspect"):
        count(save.SavePlan, "_inspect", "path:transaction.read_slot")
    count(store.SQLAgentStateStore, "save_if_version", "store:save")
    count(store.SQLAgentStateStore, "get_versioned", "store:load")


async def run(checkout: Path, url: str, sessions: int) -> dict[str, Any]:
    sys.path.insert(0, str(checkout / "bench"))
    from bench_agent import make_config, one_call

    config = make_config(url)
    store = await config.kernel.store()
    for i in range(sessions):
        await store.delete(f"stmt-u{i}", f"stmt-s{i}")
    sem = asyncio.Semaphore(50)

    async def session(i: int) -> None:
        for c in range(1, 6):
            async with sem:
                await one_call(config, f"stmt-u{i}", f"stmt-s{i}", c)

    COUNTS.clear()
    cpu = time.process_time()
    await asyncio.gather(*(session(i) for i in range(sessions)))
    cpu = time.process_time() - cpu
    counts = dict(COUNTS)
    for i in range(sessions):
        await store.delete(f"stmt-u{i}", f"stmt-s{i}")
    await config.aclose()
    calls = sessions * 5
    return {
        "checkout": str(checkout),
        "store": url,
        "calls": calls,
        "client_cpu_ms_per_call": round(cpu / calls * 1000, 3),
        "per_call": {k: round(v / calls, 3) for k, v in sorted(counts.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--sessions", type=int, default=100)
    a = ap.parse_args()
    _trace_sqlite()
    _trace_drivers()
    _trace_store()
    print(json.dumps(asyncio.run(run(a.checkout, a.store, a.sessions)), indent=1))


if __name__ == "__main__":
    main()
