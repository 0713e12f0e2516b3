"""Where a call's time goes at a given history length: warm up, then cProfile a few calls.

    python bench/profile_call.py --store memory --warm 1000 --calls 50
    python bench/profile_call.py --store sqlite+aiosqlite:////tmp/habench/p.db --warm 1000

Writes bench/results/profile_<label>.txt (top functions by own time and by cumulative time).

``--prefill N`` writes the history of N workload calls (4N messages) into the store with one
save instead of making N calls (seconds instead of minutes under valgrind); ``--mode cpu``
prints the CPU per call (``time.process_time``) of the measured calls instead of a profile;
``--mode plain`` only makes the calls. Instructions per call, with the noise of other work
on the machine left out (bench/notes/kernel.md)::

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python \\
        bench/profile_call.py --prefill 10000 --calls 100 --mode plain   # minus --calls 20

(the difference of the two totals over 80 calls).

``--mode windows --calls 10000`` makes calls 1..N on a fresh slot (W1 itself, texts made
first) and prints, per W1 window (1-20, 281-300, 491-510, 981-1,000, ..., 9,981-10,000), the
median CPU per call, the collections of each GC generation and their CPU, the minor page
faults and the system CPU: whether a window is slower for a reason of the run's own (the
collector, the heap growing) or for the machine's (bench/notes/kernel.md, "Windows").
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
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_agent import make_config, one_call  # noqa: E402
from bench_stores import probe_for  # noqa: E402
from bench_texts import (  # noqa: E402
    TOOL_NAME,
    W1_SESSION,
    W1_USER,
    call_id,
    final_text,
    tool_text,
    user_text,
)
from workload import warm_texts  # noqa: E402


def workload_history(calls: int) -> list[Any]:
    """The 4 messages of each of ``calls`` workload calls, as the kernel writes them."""
    from hookagent import Msg, TextBlock, ToolResultBlock, ToolUseBlock

    out: list[Any] = []
    for n in range(1, calls + 1):
        use = ToolUseBlock(call_id(n), TOOL_NAME, {"key": n})
        out += [
            Msg.user(user_text(n)),
            Msg.assistant([use]),
            Msg("tool", [ToolResultBlock(use.id, TOOL_NAME, (TextBlock(tool_text(n)),))]),
            Msg.assistant([TextBlock(final_text(n))], metadata={"generate_reason": "completed"}),
        ]
    return out


async def prefill(config: Any, calls: int) -> None:
    from hookagent import AgentState

    store = await config.kernel.store()
    state = AgentState(session_id=W1_SESSION, user_id=W1_USER, context=workload_history(calls))
    got = await store.get_versioned(W1_USER, W1_SESSION)
    await store.save_if_version(W1_USER, W1_SESSION, state, got.version)


async def run(store: str, warm: int, calls: int, top: int, mode: str, fill: int) -> str:
    probe = probe_for(store)
    probe.reset()
    start = fill or warm
    if not fill:
        warm_texts(warm)
    config = make_config(store)
    await config.kernel.store()
    t0 = time.perf_counter()
    if fill:
        await prefill(config, fill)
    else:
        for i in range(1, warm + 1):
            await one_call(config, W1_USER, W1_SESSION, i)
    warm_s = time.perf_counter() - t0
    for n in range(start + 1, start + max(calls, 500) + 2):  # the measured calls' texts,
        user_text(n), tool_text(n), final_text(n)  # made before (a fixed count: callgrind)
    prof = cProfile.Profile()
    c0 = time.process_time()
    t0 = time.perf_counter()
    if mode == "profile":
        prof.enable()
    for i in range(start + 1, start + calls + 1):
        await one_call(config, W1_USER, W1_SESSION, i)
    if mode == "profile":
        prof.disable()
    per_call = (time.perf_counter() - t0) / calls * 1000
    cpu_call = (time.process_time() - c0) / calls * 1000
    await config.aclose()
    buf = io.StringIO()
    how = "prefilled" if fill else "warm-up"
    buf.write(
        f"store={store} {start} calls (history {4 * start} messages), {how} {warm_s:.2f}s; "
        f"{mode}: {calls} calls, {per_call:.3f} ms/call wall, {cpu_call:.3f} ms/call CPU"
        f"{' under cProfile' if mode == 'profile' else ''}\n\n"
    )
    if mode == "profile":
        for key in ("tottime", "cumulative"):
            buf.write(f"==== top {top} by {key}\n")
            pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(top)
    return buf.getvalue()


WINDOWS = ((0, 20), (280, 300), (490, 510), (980, 1000), (1980, 2000), (4980, 5000), (9980, 10000))


async def windows(store: str, calls: int) -> str:
    import gc
    import resource
    import statistics

    probe = probe_for(store)
    probe.reset()
    warm_texts(calls + 10)
    config = make_config(store)
    await config.kernel.store()
    gcs = [0, 0, 0]
    gc_cpu = [0.0]
    began = [0.0]

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[0] = time.process_time()
        else:
            gcs[info["generation"]] += 1
            gc_cpu[0] += time.process_time() - began[0]

    gc.callbacks.append(collected)
    rows = []
    try:
        for i in range(1, calls + 1):
            r0, g0, t0 = resource.getrusage(resource.RUSAGE_SELF), list(gcs), gc_cpu[0]
            c = time.process_time()
            await one_call(config, W1_USER, W1_SESSION, i)
            c = time.process_time() - c
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            rows.append(
                (
                    c,
                    [b - a for a, b in zip(g0, gcs, strict=True)],
                    gc_cpu[0] - t0,
                    r1.ru_minflt - r0.ru_minflt,
                    r1.ru_stime - r0.ru_stime,
                )
            )
    finally:
        gc.callbacks.remove(collected)
        await config.aclose()
    out = [
        f"store={store} {calls} calls; load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
    ]
    for lo, hi in WINDOWS:
        if hi > calls:
            continue
        w = rows[lo:hi]
        out.append(
            f"calls {lo + 1}-{hi}: CPU {statistics.median(x[0] for x in w) * 1000:.3f} ms median "
            f"(without GC {statistics.median(x[0] - x[2] for x in w) * 1000:.3f}); "
            f"collections {[sum(x[1][g] for x in w) for g in range(3)]} "
            f"({sum(x[2] for x in w) * 1000:.2f} ms); minor faults {sum(x[3] for x in w)}; "
            f"system CPU {sum(x[4] for x in w) * 1000:.2f} ms"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="memory")
    ap.add_argument("--warm", type=int, default=1000)
    ap.add_argument("--prefill", type=int, default=0, help="seed N calls' history in one save")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--mode", choices=("profile", "cpu", "plain", "windows"), default="profile")
    ap.add_argument("--label")
    a = ap.parse_args()
    if a.mode == "windows":
        print(asyncio.run(windows(a.store, a.calls)))
        return
    text = asyncio.run(run(a.store, a.warm, a.calls, a.top, a.mode, a.prefill))
    if a.mode == "profile":
        label = a.label or probe_for(a.store).kind
        out = HERE / "results" / f"profile_{label}_{a.prefill or a.warm}.txt"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
