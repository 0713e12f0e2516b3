"""W4: the standard workload from 1, 2 and 4 worker processes sharing one Redis / PostgreSQL.

    python bench/w4.py --store redis --procs 1,2,4 --json out.json
    python bench/w4.py --store postgres --own-sessions 200 --calls 5 --shared-sessions 8

The same total work at every process count: ``--own-sessions`` sessions of ``--calls`` calls
each, split among the workers (a session belongs to one worker), plus ``--shared-sessions``
sessions that every worker calls on: call *n* of a shared session is made by worker
``(n - 1) % procs``, so the workers contend for it through the distributed gate
(``RedisSessionGate``; on PostgreSQL the gate lives in the shared Redis and its fence goes to
the SQL store's save). ``--inflight`` calls are in flight in total (split among the workers).

The history check, after the workers exit, reads every session back through a fresh store:
4 messages per call, each call's user / tool call / tool result / final text naming the same
*n*; an own session holds calls 1..C in order; a shared session holds each of its calls
exactly once, and each worker's calls in the order that worker made them. A lost or
duplicated message fails the check. Never asserts a time: it measures and checks.
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

from bench_stores import probe_for  # noqa: E402
from bench_texts import final_text, parse_n, tool_text, user_text  # noqa: E402

STORES = {
    "redis": os.environ.get("BENCH_W4_REDIS", "redis://127.0.0.1:6379/15?prefix=habench-w4"),
    "postgres": os.environ.get(
        "BENCH_W4_PG", "postgresql+asyncpg://postgres@127.0.0.1:5432/test?table_prefix=habench_w4_"
    ),
}
# where the gate of the PostgreSQL runs lives (the Redis runs use the store's own client)
GATE_REDIS = os.environ.get("BENCH_W4_GATE", "redis://127.0.0.1:6379/15?prefix=habench-w4gate")
SHARED_USER = "w4-shared"


def own_slot(j: int) -> tuple[str, str]:
    return f"w4-u{j}", f"s{j}"


def shared_slot(k: int) -> tuple[str, str]:
    return SHARED_USER, f"shared{k}"


def plan(args: argparse.Namespace, worker: int, procs: int) -> list[tuple[str, str, list[int]]]:
    """This worker's sessions and, for each, the call numbers it makes there (in order)."""
    work: list[tuple[str, str, list[int]]] = []
    for j in range(worker, args.own_sessions, procs):
        work.append((*own_slot(j), list(range(1, args.calls + 1))))
    for k in range(args.shared_sessions):
        mine = [n for n in range(1, args.shared_calls + 1) if (n - 1) % procs == worker]
        if mine:
            work.append((*shared_slot(k), mine))
    return work


async def open_config(store: str) -> tuple[Any, list[Any]]:
    """The configuration every worker uses, with the distributed gate; and what to close."""
    from bench_agent import make_config, store_plugins
    from hookagent_store_redis import RedisSessionGate, connect

    url = STORES[store]
    if store == "redis":
        kstore = connect(url)
        config = make_config(kstore, session_gate=RedisSessionGate(kstore), gate_timeout=120)
        return config, []
    gate_store = connect(GATE_REDIS)  # its client and prefix carry the gate's keys
    gate = RedisSessionGate(gate_store)
    config = make_config(url, plugins=store_plugins(), session_gate=gate, gate_timeout=120)
    return config, [gate_store]


async def worker_main(args: argparse.Namespace) -> dict[str, Any]:
    from bench_agent import one_call

    for n in range(1, max(args.calls, args.shared_calls) + 1):
        user_text(n), tool_text(n), final_text(n)
    config, extra = await open_config(args.store)
    await config.kernel.store()
    work = plan(args, args.worker, args.procs)
    sem = asyncio.Semaphore(max(1, args.inflight // args.procs))
    lat: list[float] = []
    errors: list[str] = []

    async def one_session(user: str, sess: str, ns: list[int]) -> None:
        for n in ns:
            async with sem:
                s = time.perf_counter()
                try:
                    await one_call(config, user, sess, n)
                except Exception as e:  # record and go on with the next session
                    errors.append(f"{user}/{sess} call {n}: {type(e).__name__}: {e}"[:300])
                    return
                lat.append(time.perf_counter() - s)

    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # the parent starts every worker at once
    t0, c0 = time.time(), time.process_time()
    await asyncio.gather(*(one_session(u, s, ns) for u, s, ns in work))
    t1, c1 = time.time(), time.process_time()
    await config.aclose()
    for thing in extra:
        await thing.aclose()
    return {
        "worker": args.worker,
        "t_start": t0,
        "t_end": t1,
        "cpu_s": round(c1 - c0, 3),
        "calls_ok": len(lat),
        "errors": errors,
        "lat_ms": [round(x * 1000, 3) for x in lat],
    }


def check_session(context: list[Any], expect: list[int], by_worker: dict[int, list[int]]) -> str:
    """'' when the history is exactly the calls ``expect`` (in order unless ``by_worker``)."""
    if len(context) != 4 * len(expect):
        return f"{len(context)} messages, expected {4 * len(expect)}"
    seen: list[int] = []
    for i in range(0, len(context), 4):
        user, use, result, final = context[i : i + 4]
        try:
            n = parse_n(user.text)
            ok = (
                user.role == "user"
                and use.role == "assistant"
                and use.tool_uses[0].input == {"key": n}
                and result.role == "tool"
                and result.tool_results[0].text == tool_text(n)
                and final.role == "assistant"
                and final.text == final_text(n)
            )
        except (ValueError, IndexError, AttributeError) as e:
            return f"messages {i}-{i + 3}: {type(e).__name__}: {e}"
        if not ok:
            return f"messages {i}-{i + 3} are not one whole call {n}"
        seen.append(n)
    if not by_worker:
        return "" if seen == expect else f"calls {seen[:8]}... not {expect[:8]}..."
    if sorted(seen) != sorted(expect):
        return f"calls {sorted(seen)[:8]}... not each of {expect[:8]}... once"
    for w, mine in by_worker.items():
        if [n for n in seen if n in set(mine)] != mine:
            return f"worker {w}'s calls out of order"
    return ""


async def history_check(args: argparse.Namespace, procs: int) -> dict[str, Any]:
    config, extra = await open_config(args.store)
    kstore = await config.kernel.store()
    bad: list[str] = []
    sessions = 0
    for j in range(args.own_sessions):
        got = await kstore.get_versioned(*own_slot(j))
        ctx = list(got.state.context) if got.state else []
        why = check_session(ctx, list(range(1, args.calls + 1)), {})
        sessions += 1
        if why:
            bad.append(f"{own_slot(j)}: {why}")
    for k in range(args.shared_sessions):
        got = await kstore.get_versioned(*shared_slot(k))
        ctx = list(got.state.context) if got.state else []
        per = {
            w: [n for n in range(1, args.shared_calls + 1) if (n - 1) % procs == w]
            for w in range(procs)
        }
        why = check_session(ctx, list(range(1, args.shared_calls + 1)), per)
        sessions += 1
        if why:
            bad.append(f"{shared_slot(k)}: {why}")
    await config.aclose()
    for thing in extra:
        await thing.aclose()
    return {"sessions_checked": sessions, "sessions_bad": len(bad), "first_bad": bad[:5]}


async def prepare(store: str) -> None:
    """Create the store's tables once, before the workers race to."""
    config, extra = await open_config(store)
    await config.kernel.store()
    await config.aclose()
    for thing in extra:
        await thing.aclose()


def run_procs(args: argparse.Namespace, procs: int) -> dict[str, Any]:
    probe_for(STORES[args.store]).reset()
    probe_for(GATE_REDIS).reset()
    asyncio.run(prepare(args.store))
    load0 = os.getloadavg()[0]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--store", args.store]
    cmd += ["--own-sessions", str(args.own_sessions), "--calls", str(args.calls)]
    cmd += [
        "--shared-sessions",
        str(args.shared_sessions),
        "--shared-calls",
        str(args.shared_calls),
    ]
    cmd += ["--inflight", str(args.inflight), "--procs", str(procs)]
    kids = [
        subprocess.Popen(
            [*cmd, "--worker", str(w)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for w in range(procs)
    ]
    for k in kids:  # every worker has imported, configured and opened its store
        assert k.stdout is not None
        line = k.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"w4 worker did not start: {line!r}")
    for k in kids:
        assert k.stdin is not None
        k.stdin.write("go\n")
        k.stdin.flush()
    outs = []
    for k in kids:
        out, _ = k.communicate(timeout=900)
        if k.returncode != 0:
            raise SystemExit(f"w4 worker failed (rc {k.returncode})")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    wall = max(o["t_end"] for o in outs) - min(o["t_start"] for o in outs)
    lat = sorted(x for o in outs for x in o["lat_ms"])
    calls = len(lat)
    cpu = sum(o["cpu_s"] for o in outs)
    check = asyncio.run(history_check(args, procs))
    return {
        "procs": procs,
        "calls_ok": calls,
        "calls_expected": args.own_sessions * args.calls + args.shared_sessions * args.shared_calls,
        "errors": sum(len(o["errors"]) for o in outs),
        "first_errors": [e for o in outs for e in o["errors"]][:3],
        "wall_s": round(wall, 3),
        "calls_per_s": round(calls / wall, 1) if wall else None,
        "lat_p50_ms": round(statistics.median(lat), 3) if lat else None,
        "lat_p99_ms": round(lat[max(0, int(len(lat) * 0.99) - 1)], 3) if lat else None,
        "client_cpu_s": round(cpu, 3),
        "cpu_over_wall_per_proc": round(cpu / wall / procs, 2) if wall else None,
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg()[0],
        "history": check,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", choices=sorted(STORES), default="redis")
    ap.add_argument("--procs", default="1,2,4", help="comma list of worker-process counts")
    ap.add_argument("--own-sessions", type=int, default=200)
    ap.add_argument("--calls", type=int, default=5, help="calls per own session")
    ap.add_argument("--shared-sessions", type=int, default=8)
    ap.add_argument("--shared-calls", type=int, default=20, help="calls per shared session")
    ap.add_argument("--inflight", type=int, default=48, help="in total, split among workers")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        a.procs = int(a.procs)
        print(json.dumps(asyncio.run(worker_main(a))), flush=True)
        return 0
    rows = []
    for procs in (int(p) for p in a.procs.split(",")):
        row = run_procs(a, procs)
        rows.append(row)
        short = {k: v for k, v in row.items() if k not in ("first_errors",)}
        print(f"[w4 {a.store}] {json.dumps(short)}", flush=True)
    out = {"store": a.store, "url": STORES[a.store], "args": vars(a) | {"json": None}, "rows": rows}
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(out, indent=1))
    bad = [r for r in rows if r["history"]["sessions_bad"] or r["errors"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
