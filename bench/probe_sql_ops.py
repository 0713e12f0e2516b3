"""The SQL store's own client CPU per agent call, without the agent.

    python bench/probe_sql_ops.py --store URL [--mode w1|w2] [--profile FILE]

A "call" is what the kernel asks of the store per agent call: ``get_versioned`` then
``save_if_version`` appending the 4 messages of a workload call.
* w1: one session grown to ``--warm`` calls, then ``--calls`` more, timed one by one;
* w2: ``--sessions`` sessions x ``--per`` calls, ``--inflight`` at a time (like W2).
Reports client CPU (process_time) and wall per call. The URL's tables/file are private to
this script: it uses table_prefix ``hasqlops_`` (PostgreSQL/MariaDB) and wipes it first.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import time
from typing import Any

from hookagent.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore


def call_messages(n: int) -> list[Msg]:
    return [
        Msg.user(f"question {n}: " + "q" * 40),
        Msg.assistant([ToolUseBlock(f"call-{n}", "lookup", {"key": n})]),
        Msg("tool", [ToolResultBlock(f"call-{n}", "lookup", (TextBlock("t" * 200),), "success")]),
        Msg.assistant("a" * 200),
    ]


async def one_call(store: SQLAgentStateStore, user: str, session: str, n: int) -> None:
    got = await store.get_versioned(user, session)
    state = got.state if got.state is not None else AgentState(session, user)
    state.context.extend(call_messages(n))
    await store.save_if_version(user, session, state, got.version)


async def wipe(store: SQLAgentStateStore) -> None:
    await store._ready()
    t = store.tables
    async with store.engine.begin() as conn:
        for table in (t.messages, t.slots, t.fences):
            await conn.execute(table.delete())


async def run(a: argparse.Namespace) -> dict[str, Any]:
    url = a.store
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1]
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    store = SQLAgentStateStore(url, table_prefix="hasqlops_", **json.loads(a.options))
    await wipe(store)
    prof = cProfile.Profile() if a.profile else None
    out: dict[str, Any] = {"store": url, "mode": a.mode}
    if a.mode == "w1":
        for n in range(a.warm):
            await one_call(store, "u", "s", n)
        wall, cpu = [], []
        if prof:
            prof.enable()
        for n in range(a.warm, a.warm + a.calls):
            w, c = time.perf_counter(), time.process_time()
            await one_call(store, "u", "s", n)
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
        if prof:
            prof.disable()
        out["wall_ms_median"] = round(statistics.median(wall) * 1000, 3)
        out["cpu_ms_mean"] = round(sum(cpu) / len(cpu) * 1000, 3)
    else:
        sem = asyncio.Semaphore(a.inflight)

        async def session(i: int) -> None:
            for n in range(a.per):
                async with sem:
                    await one_call(store, f"u{i}", f"s{i}", n)

        if prof:
            prof.enable()
        w, c = time.perf_counter(), time.process_time()
        await asyncio.gather(*(session(i) for i in range(a.sessions)))
        cpu, wall = time.process_time() - c, time.perf_counter() - w
        if prof:
            prof.disable()
        calls = a.sessions * a.per
        out["calls_per_s"] = round(calls / wall, 1)
        out["cpu_ms_per_call"] = round(cpu / calls * 1000, 3)
    await store.aclose()
    if prof and a.profile:
        with open(a.profile, "w") as fh:
            fh.write(json.dumps(out) + "\n")
            for key in ("tottime", "cumulative"):
                pstats.Stats(prof, stream=fh).strip_dirs().sort_stats(key).print_stats(40)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--mode", choices=("w1", "w2"), default="w2")
    ap.add_argument("--warm", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--per", type=int, default=5)
    ap.add_argument("--inflight", type=int, default=50)
    ap.add_argument("--options", default="{}", help="JSON of store options")
    ap.add_argument("--profile")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(run(a))))


if __name__ == "__main__":
    main()
