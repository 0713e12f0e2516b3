"""The SQL store's share of a cold load, phase by phase, in fresh processes.

    python bench/probe_sql_cold.py --store URL [--reps 3]

Each rep is a fresh process: open the store (``_ready``: migrations check, first
connection), then time the first ``get_versioned`` of the W1 session (cold) and, in the same
process, a second fresh store instance's cold read split into the store's read (rows fetched,
nothing decoded) and ``codec.decode_msgs`` of the bodies. Run W1 on the URL first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from operator import itemgetter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


async def child(url: str) -> dict[str, float]:
    from bench_texts import W1_SESSION, W1_USER
    from hookagent_store_sql import SQLAgentStateStore, slot_hash, verify
    from hookagent_store_sql.pg_direct import PgDirect

    out: dict[str, float] = {}
    t = time.perf_counter()
    store = SQLAgentStateStore(url)
    await store._ready()
    out["open_ms"] = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    got = await store.get_versioned(W1_USER, W1_SESSION)
    out["get_cold_ms"] = (time.perf_counter() - t) * 1000
    assert got.state is not None, "run W1 on this store first"
    t = time.perf_counter()
    await store.get_versioned(W1_USER, W1_SESSION)
    out["get_warm_ms"] = (time.perf_counter() - t) * 1000
    # a second instance: the store's read alone, then the decode alone
    other = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
    await other._ready()
    h, slot = slot_hash(W1_SESSION, "agent_state"), (W1_USER, W1_SESSION, "agent_state")
    direct = other._direct
    t = time.perf_counter()
    if isinstance(direct, PgDirect):  # the cold statement a PostgreSQL cold load runs
        got_pg = await direct.load_cold(W1_USER, h)
        out["read_only_ms"] = (time.perf_counter() - t) * 1000
        _v, _g, count, _head, seqs, bodies, ends, ns, chunks = got_pg
        t = time.perf_counter()
        split = verify.split_chunks(ends or (), ns or (), chunks or (), slot)
        verify.decode_split(seqs or (), bodies or (), split, count, slot)
    else:  # the row read (rows and chunks, nothing decoded)
        rows = sorted(await other._read_rows(W1_USER, h, 0), key=itemgetter(0))
        out["read_only_ms"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        verify.decode_tail(rows, 0, rows[0][3], slot)
    out["decode_ms"] = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    await other.get_versioned(W1_USER, W1_SESSION)
    out["get_cold_2nd_instance_ms"] = (time.perf_counter() - t) * 1000
    out["messages"] = len(got.state.context)
    await other.aclose()
    await store.aclose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(asyncio.run(child(a.store))))
        return
    reps = []
    for _ in range(a.reps):
        cmd = [sys.executable, __file__, "--child", "--store", a.store]
        p = subprocess.run(cmd, capture_output=True, text=True, check=True)
        reps.append(json.loads(p.stdout.strip().splitlines()[-1]))
    keys = [k for k in reps[0] if k != "messages"]
    med = {k: round(statistics.median(r[k] for r in reps), 1) for k in keys}
    print(json.dumps({"store": a.store, "messages": reps[0]["messages"], "median": med}))


if __name__ == "__main__":
    main()
