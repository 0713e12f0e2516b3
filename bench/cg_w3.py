"""Instructions of W3's load and one call (after the store is open), for callgrind.

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        python bench/cg_w3.py --store URL --n N [--decoder old]

In a fresh process: configure, open the store (not counted), then ``one_call`` on the W1
session inside ``functools.reduce`` (the only call callgrind collects): the cold load of
every message, the call, the save. ``--decoder old`` swaps in the per-record decoder of
before the bulk decode (``_compact.compact_records``), for an A/B in one checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--n", type=int, required=True, help="the call's number (a new one each run)")
    ap.add_argument("--decoder", choices=("new", "old"), default="new")
    a = ap.parse_args()
    from bench_agent import make_config, one_call, store_plugins
    from bench_texts import W1_SESSION, W1_USER

    if a.decoder == "old":
        from hookagent import _compact, codec

        codec.bulk_records = _compact.compact_records  # type: ignore[attr-defined]
    loop = asyncio.new_event_loop()
    config = make_config(a.store, plugins=store_plugins())
    loop.run_until_complete(config.kernel.store())  # the store open, not counted
    call = lambda: one_call(config, W1_USER, W1_SESSION, a.n)  # noqa: E731
    if a.n:  # --n 0: everything but the call (a whole-process baseline, threads included)
        functools.reduce(lambda _, f: loop.run_until_complete(f()), [call], None)
    loop.run_until_complete(config.aclose())
    print("ok")


if __name__ == "__main__":
    main()
