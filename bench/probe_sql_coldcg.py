"""Instructions of one cold ``get_versioned`` of the W1 session, for callgrind.

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        .venv/bin/python bench/probe_sql_coldcg.py --store URL

In a fresh process: open the store (migrations checked, first connection, statements
prepared: not counted), then one cold ``get_versioned`` inside ``functools.reduce`` (the
only call callgrind collects; PostgreSQL decodes on the event loop's thread, so its whole
load is counted). Prints the messages loaded and the load's wall and CPU ms (meaningful
only beside the load average, and outside valgrind). Run W1 on the URL first.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    a = ap.parse_args()
    from bench_texts import W1_SESSION, W1_USER
    from hookagent_store_sql import SQLAgentStateStore

    loop = asyncio.new_event_loop()
    store = SQLAgentStateStore(a.store)
    loop.run_until_complete(store.open())
    load = lambda: store.get_versioned(W1_USER, W1_SESSION)  # noqa: E731
    wall, cpu = time.perf_counter(), time.process_time()
    got = functools.reduce(lambda _, f: loop.run_until_complete(f()), [load], None)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    loop.run_until_complete(store.aclose())
    n = len(got.state.context) if got.state is not None else 0
    print(
        json.dumps({"messages": n, "load_ms": round(wall * 1e3, 2), "cpu_ms": round(cpu * 1e3, 2)})
    )


if __name__ == "__main__":
    main()
