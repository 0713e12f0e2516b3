"""EVENT_LOG against LEGACY on the same backend: W1 per call (calls 1-20, 491-510,
981-1000), W3 cold resume in a fresh process, and what each mode stores.

    python bench/session_log.py --backend file --calls 1000
    python bench/session_log.py --backend redis --backend postgresql --calls 1000 --w3-reps 3

The two modes run back to back per backend, in alternating blocks of 50 calls (W3: its reps
alternate too), so that a change of the machine's load hits both. Each row records the load average, the process
CPU over wall, and the windows of process CPU per call (``cpu``, ``cpu_log_over_legacy_*``:
on a loaded machine the figure that still means something). Never asserts timings (see bench/README.md for the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_agent import make_config, one_call, store_plugins  # noqa: E402
from bench_stores import probe_for  # noqa: E402
from bench_texts import user_text  # noqa: E402

BACKENDS = {
    "memory": ("memory", "memory://habench"),
    "file": ("file:///tmp/habench-log/legacy", "file:///tmp/habench-log/log"),
    "redis": (
        "redis://127.0.0.1:6379/14?prefix=habench-legacy",
        "redis://127.0.0.1:6379/14?prefix=habench-log",
    ),
    "postgresql": (
        "postgresql+asyncpg://postgres@127.0.0.1:5432/test",
        "postgresql+asyncpg://postgres@127.0.0.1:5432/test",
    ),
    "sqlite": (
        "sqlite+aiosqlite:////tmp/habench-log/legacy.db",
        "sqlite+aiosqlite:////tmp/habench-log/log.db",
    ),
}
BLOCK = 50


DURABILITY = os.environ.get("HOOKAGENT_BENCH_DURABILITY", "dispatch")


def config_for(mode: str, url: str) -> Any:
    from hookagent_session_log import plugin

    if mode == "legacy":
        return make_config(url)
    options = {"session-log": {"durability": DURABILITY}}
    from hookagent import InMemoryAgentStateStore  # never consulted: the log is the authority

    return make_config(
        InMemoryAgentStateStore(),
        session_log=url,
        plugins=[*store_plugins(), plugin],
        plugin_options=options,
    )


def windows(times: list[float]) -> dict[str, float]:
    n = len(times)

    def med(a: int, b: int) -> float:
        return round(statistics.median(times[a:b]) * 1000, 3)

    last = (n - 20, n)
    mid = (n // 2 - 10, n // 2 + 10)
    out = {"first_ms": med(0, 20), "mid_ms": med(*mid), "last_ms": med(*last)}
    out["last_over_first"] = round(out["last_ms"] / out["first_ms"], 2)
    return out


async def log_bytes(config: Any, user: str, session: str) -> int:
    """What the log holds for the session: the encoded bytes of its events."""
    from hookagent.sessionlog import encode_batch

    log = await (await config.kernel.store()).log()
    events = await log.read_after(user, session, 0)
    return sum(len(encode_batch([e.__class__(**{**_fields(e), "seq": 0})])) - 2 for e in events)


def _fields(e: Any) -> dict[str, Any]:
    import attrs

    return attrs.asdict(e, recurse=False)


async def w1(backend: str, calls: int, session: str) -> dict[str, Any]:
    legacy_url, log_url = BACKENDS[backend]
    configs = {"legacy": config_for("legacy", legacy_url), "log": config_for("log", log_url)}
    for config in configs.values():
        await (await config.kernel.store()).delete("bench", session)
    times: dict[str, list[float]] = {m: [] for m in configs}
    cpus: dict[str, list[float]] = {m: [] for m in configs}  # process CPU of each call
    cpu: dict[str, float] = {m: 0.0 for m in configs}
    wall: dict[str, float] = {m: 0.0 for m in configs}
    loads = [os.getloadavg()[0]]
    for start in range(1, calls + 1, BLOCK):
        for mode, config in configs.items():
            c0, w0 = time.process_time(), time.perf_counter()
            for i in range(start, min(start + BLOCK, calls + 1)):
                s, p = time.perf_counter(), time.process_time()
                await one_call(config, "bench", session, i)
                times[mode].append(time.perf_counter() - s)
                cpus[mode].append(time.process_time() - p)
            cpu[mode] += time.process_time() - c0
            wall[mode] += time.perf_counter() - w0
        loads.append(os.getloadavg()[0])
    out: dict[str, Any] = {"backend": backend, "calls": calls, "load": [min(loads), max(loads)]}
    for mode in configs:
        out[mode] = {**windows(times[mode]), "cpu_over_wall": round(cpu[mode] / wall[mode], 2)}
        out[mode]["cpu"] = windows(cpus[mode])  # CPU per call: what a loaded machine keeps
    probe = probe_for(legacy_url)
    try:
        out["legacy"]["stored_bytes"] = (
            await probe.stored_bytes(await configs["legacy"].kernel.store(), "bench", session)
        )["bytes"]
    except Exception as exc:  # a probe that does not know this backend
        out["legacy"]["stored_bytes"] = f"n/a ({type(exc).__name__})"
    out["log"]["event_bytes"] = await log_bytes(configs["log"], "bench", session)
    for m in ("first_ms", "last_ms"):
        out[f"log_over_legacy_{m[:-3]}"] = round(out["log"][m] / out["legacy"][m], 2)
        out[f"cpu_log_over_legacy_{m[:-3]}"] = round(
            out["log"]["cpu"][m] / out["legacy"]["cpu"][m], 2
        )
    for config in configs.values():
        await config.aclose()
    return out


def analyze_pg() -> list[str]:
    """``ANALYZE`` the store's tables before W3, as autovacuum would have within a minute
    of W1 on a deployed database. W1 runs on tables this run created: never analyzed, the
    planner takes the log's batch index (whose first columns are the session's too) for a
    point read instead of the primary key, ~3 ms a read at 4,000 commits against 0.15
    (``docs/stores/sql.md``, "Fresh tables"). Both modes' tables, so neither is favoured."""
    import subprocess as sp

    dsn = "host=127.0.0.1 port=5432 user=postgres dbname=test"
    like = "hookagent\\_%"
    names = sp.run(
        ["psql", "-X", "-At", dsn, "-c",
         f"SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE '{like}'"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if names:
        sp.run(["psql", "-X", "-q", dsn, "-c", "ANALYZE " + ", ".join(names)], check=True)
    return names


def w3(backend: str, session: str, n: int, reps: int) -> dict[str, Any]:
    """The modes' reps interleaved (LEGACY, EVENT_LOG, LEGACY, ...): a change of the
    machine's load hits both."""
    res: dict[str, Any] = {}
    got: dict[str, list[float]] = {"legacy": [], "log": []}
    for r in range(reps):
        for mode in ("legacy", "log"):
            if mode in res:
                continue  # (it failed)
            cmd = [sys.executable, __file__, "--w3-child", mode, "--backend", backend]
            cmd += ["--session", session, "--n", str(n + r)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode:
                res[mode] = {"error": p.stderr[-1500:]}
                continue
            got[mode].append(json.loads(p.stdout.strip().splitlines()[-1])["ms"])
    for mode, ms in got.items():
        if mode not in res:
            res[mode] = {"load_and_call_ms_median": round(statistics.median(ms), 3), "reps": ms}
    if all("load_and_call_ms_median" in res[m] for m in ("legacy", "log")):
        res["log_over_legacy"] = round(
            res["log"]["load_and_call_ms_median"] / res["legacy"]["load_and_call_ms_median"], 2
        )
    return res


async def w3_child(mode: str, backend: str, session: str, n: int) -> None:
    url = BACKENDS[backend][0 if mode == "legacy" else 1]
    config = config_for(mode, url)
    await config.kernel.store()
    if mode == "log":
        await (await config.kernel.store()).log()
    s = time.perf_counter()
    async with config.build() as agent:
        from hookagent import RuntimeContext

        await agent.call(user_text(n), RuntimeContext(user_id="bench", session_id=session))
    ms = (time.perf_counter() - s) * 1000
    await config.aclose()
    print(json.dumps({"ms": round(ms, 3)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", action="append", choices=sorted(BACKENDS))
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--w3-reps", type=int, default=3)
    ap.add_argument("--session", default="w1-log")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--durability", choices=("dispatch", "tools"), default="dispatch")
    ap.add_argument("--w3-child", choices=("legacy", "log"), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ["HOOKAGENT_BENCH_DURABILITY"] = args.durability  # the W3 children too
    global DURABILITY
    DURABILITY = args.durability
    if args.w3_child:
        asyncio.run(w3_child(args.w3_child, args.backend[0], args.session, args.n))
        return
    Path("/tmp/habench-log").mkdir(parents=True, exist_ok=True)
    rows = []
    for backend in args.backend or ["file"]:
        row = asyncio.run(w1(backend, args.calls, args.session))
        if backend == "postgresql":
            row["analyzed"] = analyze_pg()
        row["w3"] = w3(backend, args.session, args.calls + 1, args.w3_reps)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
