"""Instructions of W3's load and one call (after the store is open), for callgrind.

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        python bench/cg_w3.py --store URL --n N

In a fresh process: configure, open the store (not counted), then ``one_call`` on the W1
session inside ``functools.reduce`` (the only call callgrind collects): the cold load of
every message, the call, the save. ``--n 0`` runs everything but the call (a baseline for
a store that loads in a worker thread, which the toggle does not follow). Prints the call's
wall and CPU ms (meaningful only beside the load average, and outside valgrind).
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
    ap.add_argument("--n", type=int, required=True, help="the call's number (a new one each run)")
    a = ap.parse_args()
    from bench_agent import make_config, one_call, store_plugins
    from bench_texts import W1_SESSION, W1_USER

    loop = asyncio.new_event_loop()
    config = make_config(a.store, plugins=store_plugins())
    loop.run_until_complete(config.kernel.store())  # the store open, not counted
    call = lambda: one_call(config, W1_USER, W1_SESSION, a.n)  # noqa: E731
    wall = cpu = 0.0
    if a.n:  # --n 0: everything but the call (a whole-process baseline, threads included)
        wall, cpu = time.perf_counter(), time.process_time()
        functools.reduce(lambda _, f: loop.run_until_complete(f()), [call], None)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    loop.run_until_complete(config.aclose())
    print(json.dumps({"load_and_call_ms": round(wall * 1e3, 2), "cpu_ms": round(cpu * 1e3, 2)}))


if __name__ == "__main__":
    main()
