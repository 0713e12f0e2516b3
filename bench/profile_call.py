"""Where a call's time goes at a given history length: warm up, then cProfile a few calls.

    python bench/profile_call.py --store memory --warm 1000 --calls 50
    python bench/profile_call.py --store sqlite+aiosqlite:////tmp/habench/p.db --warm 1000

Writes bench/results/profile_<label>.txt (top functions by own time and by cumulative time).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_agent import make_config, one_call  # noqa: E402
from bench_stores import probe_for  # noqa: E402
from bench_texts import W1_SESSION, W1_USER  # noqa: E402
from workload import warm_texts  # noqa: E402


async def run(store: str, warm: int, calls: int, top: int) -> str:
    probe = probe_for(store)
    probe.reset()
    warm_texts(warm + calls + 1)
    config = make_config(store)
    await config.kernel.store()
    t0 = time.perf_counter()
    for i in range(1, warm + 1):
        await one_call(config, W1_USER, W1_SESSION, i)
    warm_s = time.perf_counter() - t0
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for i in range(warm + 1, warm + calls + 1):
        await one_call(config, W1_USER, W1_SESSION, i)
    prof.disable()
    per_call = (time.perf_counter() - t0) / calls * 1000
    await config.aclose()
    buf = io.StringIO()
    buf.write(
        f"store={store} warm={warm} calls (history {4 * warm} messages), warm-up {warm_s:.2f}s; "
        f"profiled {calls} calls: {per_call:.3f} ms/call under cProfile\n\n"
    )
    for key in ("tottime", "cumulative"):
        buf.write(f"==== top {top} by {key}\n")
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(top)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="memory")
    ap.add_argument("--warm", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--label")
    a = ap.parse_args()
    text = asyncio.run(run(a.store, a.warm, a.calls, a.top))
    label = a.label or probe_for(a.store).kind
    out = HERE / "results" / f"profile_{label}_{a.warm}.txt"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
