#!/usr/bin/env python3
"""The JSON-file store alone, through its async API, as the agent uses it (no agent, no model).

    .venv/bin/python bench/probe_file_store.py --dir /tmp/hafile/probe seq  [--calls 1000]
    .venv/bin/python bench/probe_file_store.py --dir /tmp/hafile/probe conc [--sessions 200]
    .venv/bin/python bench/probe_file_store.py --dir /tmp/hafile/probe cold [--reps 3]

One "call" is what the kernel does to the store per agent call: ``get_versioned`` (warm), then
``save_if_version`` of the state with 4 more messages. ``seq`` grows one session and prints
wall and CPU (user/sys, all threads) per call for calls 1-20 and the last 20; ``conc`` runs
sessions x calls with ``--inflight`` in flight (W2's shape); ``cold`` loads the ``seq``
session in fresh processes. ``--nofsync`` replaces ``os.fsync`` by a no-op to show its share.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import turn
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore

U = "user-probe"


TURNS = [turn(n) for n in range(1, 2001)]


async def one_call(store: LocalJsonFileStore, sid: str, n: int) -> None:
    got = await store.get_versioned(U, sid)
    state = got.state if got.state is not None else AgentState(session_id=sid)
    state.context.extend(TURNS[n % len(TURNS)])
    await store.save_if_version(U, sid, state, got.version)


def cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)  # every thread, microsecond resolution
    return r.ru_utime, r.ru_stime


async def seq(root: Path, calls: int) -> dict[str, object]:
    store = LocalJsonFileStore(root)
    walls, users, syss = [], [], []
    for n in range(calls):
        u0, s0 = cpu()
        w0 = time.perf_counter()
        await one_call(store, "seq", n)
        walls.append(time.perf_counter() - w0)
        u1, s1 = cpu()
        users.append(u1 - u0)
        syss.append(s1 - s0)
    await store.aclose()

    def win(xs: list[float], a: int, b: int) -> float:
        return round(statistics.mean(xs[a:b]) * 1000, 3)

    out: dict[str, object] = {}
    for name, (a, b) in {"first": (0, 20), "last": (calls - 20, calls)}.items():
        out[name] = {"wall_ms_median": round(statistics.median(walls[a:b]) * 1000, 3),
                     "user_ms": win(users, a, b), "sys_ms": win(syss, a, b)}  # fmt: skip
    out["cpu_ms_per_call_all"] = round((sum(users) + sum(syss)) / calls * 1000, 3)
    return out


async def conc(root: Path, sessions: int, calls: int, inflight: int) -> dict[str, object]:
    store = LocalJsonFileStore(root)
    sem = asyncio.Semaphore(inflight)

    async def session(i: int) -> None:
        for n in range(calls):
            async with sem:
                await one_call(store, f"c{i}", n)

    u0, s0 = cpu()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    await asyncio.gather(*(session(i) for i in range(sessions)))
    wall = time.perf_counter() - w0
    u1, s1 = cpu()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    await store.aclose()
    total = sessions * calls
    return {"calls": total, "calls_per_s": round(total / wall, 1),
            "user_ms_per_call": round((u1 - u0) / total * 1000, 3),
            "sys_ms_per_call": round((s1 - s0) / total * 1000, 3),
            "ctx_switches_per_call": round((r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw
                                            - r0.ru_nivcsw) / total, 1)}  # fmt: skip


async def cold_child(root: Path) -> dict[str, float]:
    store = LocalJsonFileStore(root)
    w0 = time.perf_counter()
    c0 = time.process_time()
    got = await store.get_versioned(U, "seq")
    out = {"cold_ms": (time.perf_counter() - w0) * 1000,
           "cold_cpu_ms": (time.process_time() - c0) * 1000}  # fmt: skip
    w0 = time.perf_counter()
    await store.get_versioned(U, "seq")
    out["warm_ms"] = (time.perf_counter() - w0) * 1000
    assert got.state is not None
    out["messages"] = len(got.state.context)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--nofsync", action="store_true")
    ap.add_argument("mode", choices=["seq", "conc", "cold", "cold-child"])
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--inflight", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.nofsync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    root = Path(a.dir)
    if a.mode == "seq":
        shutil.rmtree(root / "seq", ignore_errors=True)
        res = asyncio.run(seq(root / "seq", a.calls or 1000))
    elif a.mode == "conc":
        shutil.rmtree(root / "conc", ignore_errors=True)
        res = asyncio.run(conc(root / "conc", a.sessions, a.calls or 5, a.inflight))
    elif a.mode == "cold-child":
        res = asyncio.run(cold_child(root / "seq"))
    else:
        reps = []
        for _ in range(a.reps):
            cmd = [sys.executable, __file__, "--dir", a.dir, "cold-child"]
            p = subprocess.run(cmd, capture_output=True, text=True, check=True)
            reps.append(json.loads(p.stdout.strip().splitlines()[-1]))
        res = {k: [round(r[k], 1) for r in reps] for k in reps[0] if k not in ("mode", "nofsync")}
    print(json.dumps({"mode": a.mode, "nofsync": a.nofsync, **res}))


if __name__ == "__main__":
    main()
