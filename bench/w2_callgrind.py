"""W2's shape for instruction counts: ``--sessions`` new sessions x 5 agent calls.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        <checkout>/.venv/bin/python bench/w2_callgrind.py --checkout <checkout> --store URL \\
        --sessions N 2>&1 | grep Collected

Run it at two sizes (20 and 200 sessions) and take (I(200) - I(20)) / (180 * 5): the
client's user-space instructions per W2 call (every thread; the database server's work is
not counted), independent of the machine's load. One session's calls run first (imports,
prepared statements) and every session is deleted before and after, so both sizes do the
same fixed work. ``--inflight`` defaults to W2's 50; PostgreSQL under valgrind needs fewer
(8) or the pool of 10 times out.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path


async def run(checkout: Path, url: str, sessions: int, inflight: int) -> None:
    sys.path.insert(0, str(checkout / "bench"))
    from bench_agent import make_config, one_call

    config = make_config(url)
    store = await config.kernel.store()
    for i in range(200):
        await store.delete(f"cg-u{i}", f"cg-s{i}")
    for c in range(1, 6):
        await one_call(config, "cg-warm", "cg-warm", c)
    await store.delete("cg-warm", "cg-warm")
    sem = asyncio.Semaphore(inflight)

    async def session(i: int) -> None:
        for c in range(1, 6):
            async with sem:
                await one_call(config, f"cg-u{i}", f"cg-s{i}", c)

    await asyncio.gather(*(session(i) for i in range(sessions)))
    for i in range(sessions):
        await store.delete(f"cg-u{i}", f"cg-s{i}")
    await config.aclose()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--sessions", type=int, required=True)
    ap.add_argument("--inflight", type=int, default=50)
    a = ap.parse_args()
    asyncio.run(run(a.checkout, a.store, a.sessions, a.inflight))
    print("w2_callgrind: done", file=sys.stderr)


if __name__ == "__main__":
    main()
