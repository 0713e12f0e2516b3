"""Where W3's cold "load + 1 call" goes, in a fresh process, for one store.

    python bench/w3_breakdown.py --store URL [--reps 3]

Each rep is a fresh process that opens the store and times, in order: the first
``get_versioned`` of the W1 session (cold: every message is read and decoded), a second one
(warm: the store's cache), the first agent call (warm store, but the first call of the
process), and a second call. It also times ``codec.decode_msg`` over the same messages, so the
decoding share of the cold load is visible, and lists the modules first imported inside the
timed load and the timed first call (a lazy import that the store open did not pay). Does not change the W1 session beyond the calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


async def child(store: str, n: int) -> dict[str, Any]:
    from bench_agent import make_config, one_call, store_plugins
    from bench_texts import W1_SESSION, W1_USER
    from hookagent.codec import decode_msg, encode_msg

    config = make_config(store, plugins=store_plugins())
    kstore = await config.kernel.store()
    out: dict[str, Any] = {}
    before = set(sys.modules)
    s = time.perf_counter()
    got = await kstore.get_versioned(W1_USER, W1_SESSION)
    out["get_cold_ms"] = (time.perf_counter() - s) * 1000
    after_get = set(sys.modules)
    s = time.perf_counter()
    await kstore.get_versioned(W1_USER, W1_SESSION)
    out["get_warm_ms"] = (time.perf_counter() - s) * 1000
    s = time.perf_counter()
    await one_call(config, W1_USER, W1_SESSION, n)
    out["first_call_ms"] = (time.perf_counter() - s) * 1000
    # Modules first imported inside the timed window (a lazy import the open did not pay).
    out["imported_in_get"] = sorted(after_get - before)
    out["imported_in_first_call"] = sorted(set(sys.modules) - after_get)
    s = time.perf_counter()
    await one_call(config, W1_USER, W1_SESSION, n + 1)
    out["second_call_ms"] = (time.perf_counter() - s) * 1000
    assert got.state is not None, "run W1 on this store first"
    blobs = [encode_msg(m) for m in got.state.context]
    s = time.perf_counter()
    for b in blobs:
        decode_msg(b)
    out["decode_all_ms"] = (time.perf_counter() - s) * 1000
    out["messages"] = len(blobs)
    await config.aclose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=5000, help="first call number to use")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(asyncio.run(child(a.store, a.n))))
        return
    reps = []
    for r in range(a.reps):
        cmd = [sys.executable, __file__, "--child", "--store", a.store, "--n", str(a.n + 2 * r)]
        p = subprocess.run(cmd, capture_output=True, text=True, check=True)
        reps.append(json.loads(p.stdout.strip().splitlines()[-1]))
    keys = [k for k in reps[0] if isinstance(reps[0][k], float)]
    med = {k: round(statistics.median(r[k] for r in reps), 1) for k in keys}
    imported = {
        k: sorted({m for r in reps for m in r[k]}) for k in reps[0] if k.startswith("imported_")
    }
    print(
        json.dumps({"store": a.store, "messages": reps[0]["messages"], "median": med, **imported})
    )


if __name__ == "__main__":
    main()
