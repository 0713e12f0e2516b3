"""The standard workload (W0-W3) through hookagent's agent, one store at a time.

    python bench/workload.py --store memory
    python bench/workload.py --store file:///tmp/habench/files --json bench/results/file.json
    python bench/workload.py --store 'redis://127.0.0.1:6379/15?prefix=habench' --w1-calls 300

One ``AgentConfig`` is made per run and an agent is built (and closed) for every call, as a
web handler would. See bench/README.md for what each figure means. Never asserts timings.
"""

from __future__ import annotations

import time

_T_PROC0 = time.perf_counter()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_agent import make_config, one_call, store_plugins  # noqa: E402
from bench_stores import probe_for  # noqa: E402
from bench_texts import W1_SESSION, W1_USER, final_text, tool_text, user_text  # noqa: E402

_T_IMPORTED = time.perf_counter()
RESULTS = HERE / "results"


def med_ms(xs: list[float]) -> float | None:
    return round(statistics.median(xs) * 1000, 3) if xs else None


def windows(times: list[float]) -> dict[str, Any]:
    """Medians over calls 1-20, 491-510, 981-1000 (and 9,981-10,000 on a run that long); on
    a shorter run, its middle/last 20."""
    n = len(times)
    if n >= 1000:
        mid, last = (490, 510), (980, 1000)
    else:
        m = max(0, n // 2 - 10)
        mid, last = (m, m + 20), (max(0, n - 20), n)
    out = {"w_first": {"calls": "1-20", "median_ms": med_ms(times[:20])}}
    out["w_mid"] = {"calls": f"{mid[0] + 1}-{mid[1]}", "median_ms": med_ms(times[mid[0] : mid[1]])}
    out["w_last"] = {
        "calls": f"{last[0] + 1}-{last[1]}",
        "median_ms": med_ms(times[last[0] : last[1]]),
    }
    first, final = out["w_first"]["median_ms"], out["w_last"]["median_ms"]
    out["last_over_first"] = round(final / first, 2) if first and final else None
    if n >= 10000:  # flat to 10,000 calls: calls 9,981-10,000 against calls 981-1,000
        far = med_ms(times[9980:10000])
        out["w_10k"] = {"calls": "9981-10000", "median_ms": far}
        out["w10k_over_w1k"] = round(far / final, 2) if far and final else None
    return out


def warm_texts(upto: int) -> None:
    """Make the workload's strings before timing (their generation is not the framework's)."""
    for n in range(1, upto + 1):
        user_text(n), tool_text(n), final_text(n)


def raw_content_bytes(calls: int) -> dict[str, int]:
    """What the conversation says, without any framing: the three texts and the tool input."""
    text = sum(
        len(user_text(n).encode()) + len(tool_text(n).encode()) + len(final_text(n).encode())
        for n in range(1, calls + 1)
    )
    tool_input = sum(
        len(json.dumps({"key": n}, separators=(",", ":"))) for n in range(1, calls + 1)
    )
    return {"text_bytes": text, "text_and_tool_input_bytes": text + tool_input}


async def run_w1(store: str, calls: int, budget_s: float) -> tuple[dict[str, Any], list[float]]:
    from hookagent.codec import encode_msg

    probe = probe_for(store)
    probe.reset()
    warm_texts(calls + 10)
    config = make_config(store)
    kernel_store = await config.kernel.store()
    times: list[float] = []
    cpus: list[float] = []
    cut = False
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for i in range(1, calls + 1):
        user_text(i), tool_text(i), final_text(i)  # cached (8,192 kept): made before the timer
        c = time.process_time()
        s = time.perf_counter()
        await one_call(config, W1_USER, W1_SESSION, i)
        times.append(time.perf_counter() - s)
        cpus.append(time.process_time() - c)
        if time.perf_counter() - t0 > budget_s and i < calls:
            cut = True
            break
    total = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    got = await kernel_store.get_versioned(W1_USER, W1_SESSION)
    hist = len(got.state.context) if got.state else 0
    encoded = sum(len(encode_msg(m)) for m in got.state.context) if got.state else 0
    stored = await probe.stored_bytes(kernel_store, W1_USER, W1_SESSION)
    raw = raw_content_bytes(len(times))
    await config.aclose()
    res = {
        "calls_requested": calls,
        "calls_done": len(times),
        "cut_by_budget": cut,
        "total_s": round(total, 3),
        "client_cpu_s": round(cpu, 3),
        "mean_ms": round(total / len(times) * 1000, 3),
        **windows(times),
        "cpu": windows(cpus),
        "history_len": hist,
        "history_expected": 4 * len(times),
        "stored": stored,
        "raw_content": {**raw, "encoded_messages_bytes": encoded},
        "stored_over_text": round(stored["bytes"] / raw["text_bytes"], 2),
        "stored_over_encoded": round(stored["bytes"] / encoded, 2) if encoded else None,
    }
    return res, times


async def run_w2(store: str, sessions: int, per_session: int, inflight: int) -> dict[str, Any]:
    """200 new sessions (ids of this run only), 5 calls each, 50 in flight. Nothing is deleted
    before or after: on ext4 without a journal, deleting a run's 1,000 files would tax every
    inode the next few minutes' rows create (``floor_w2_file.py``); the bench store is
    thrown away with the sitting."""
    warm_texts(per_session)
    config = make_config(store)
    kernel_store = await config.kernel.store()
    run = f"{os.getpid():x}{time.time_ns() % (1 << 32):x}"
    sem = asyncio.Semaphore(inflight)
    lat: list[float] = []
    errors: list[str] = []

    async def one_session(i: int) -> None:
        for c in range(1, per_session + 1):
            async with sem:
                s = time.perf_counter()
                try:
                    await one_call(config, f"user{i}-{run}", f"sess{i}-{run}", c)
                except Exception as e:  # record and go on, like the peers' driver
                    errors.append(f"{type(e).__name__}: {e}"[:300])
                    return
                lat.append(time.perf_counter() - s)

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.gather(*(one_session(i) for i in range(sessions)))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    got = await kernel_store.get_versioned(f"user0-{run}", f"sess0-{run}")
    await config.aclose()
    lat.sort()
    return {
        "sessions": sessions,
        "calls_per_session": per_session,
        "inflight": inflight,
        "calls_ok": len(lat),
        "errors": len(errors),
        "first_errors": errors[:3],
        "wall_s": round(wall, 3),
        "client_cpu_s": round(cpu, 3),
        "calls_per_s": round(len(lat) / wall, 1) if wall else None,
        "lat_p50_ms": med_ms(lat),
        "lat_p95_ms": round(lat[int(len(lat) * 0.95) - 1] * 1000, 3) if lat else None,
        "history_len_sess0": len(got.state.context) if got.state else 0,
        "history_expected": 4 * per_session,
    }


async def w3_child(store: str, n: int, profile: str | None = None) -> dict[str, Any]:
    """In a fresh process: configure, open the store, load the W1 session, make call n."""
    s = time.perf_counter()
    plugins = store_plugins()  # importing the store plugin (and its driver) is import time
    t_plugins = time.perf_counter() - s
    s = time.perf_counter()
    config = make_config(store, plugins=plugins)
    kernel_store = await config.kernel.store()
    t_open = time.perf_counter() - s
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    s, c = time.perf_counter(), time.process_time()
    await one_call(config, W1_USER, W1_SESSION, n)
    t_call, c_call = time.perf_counter() - s, time.process_time() - c
    if prof is not None and profile:
        import pstats

        prof.disable()
        with open(profile, "w") as fh:
            fh.write(f"W3 cold call on {store}: {t_call * 1000:.1f} ms under cProfile\n")
            for key in ("tottime", "cumulative"):
                pstats.Stats(prof, stream=fh).strip_dirs().sort_stats(key).print_stats(25)
    got = await kernel_store.get_versioned(W1_USER, W1_SESSION)
    await config.aclose()
    return {
        "import_s": round(_T_IMPORTED - _T_PROC0 + t_plugins, 3),
        "plugin_import_s": round(t_plugins, 3),
        "open_ms": round(t_open * 1000, 3),
        "load_and_call_ms": round(t_call * 1000, 3),
        "load_and_call_cpu_ms": round(c_call * 1000, 3),
        "history_len_after": len(got.state.context) if got.state else 0,
    }


def run_w3(store: str, base: int, reps: int) -> dict[str, Any]:
    out = []
    for r in range(reps):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--w3-child", "--store", store]
        cmd += ["--n", str(base + 1 + r)]
        s = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - s
        if p.returncode != 0:
            out.append({"error": p.stderr[-2000:]})
            continue
        rep = json.loads(p.stdout.strip().splitlines()[-1])
        rep["process_wall_s"] = round(wall, 3)
        out.append(rep)
    ok = [x for x in out if "error" not in x]

    def med(k: str) -> float | None:
        return round(statistics.median(x[k] for x in ok), 3) if ok else None

    return {
        "reps": out,
        "load_and_call_ms_median": med("load_and_call_ms"),
        "load_and_call_cpu_ms_median": med("load_and_call_cpu_ms"),
        "open_ms_median": med("open_ms"),
        "import_s_median": med("import_s"),
        "process_wall_s_median": med("process_wall_s"),
    }


async def build_cost(store: str, iters: int) -> dict[str, Any]:
    """µs for ``config.build()`` + close, with and without ``async with`` (store opened)."""
    config = make_config(store)
    await config.kernel.store()
    out: dict[str, Any] = {"iters": iters}
    for label in ("build_close_us", "async_with_us"):
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(iters):
                if label == "build_close_us":
                    await config.build().close()
                else:
                    async with config.build():
                        pass
            samples.append((time.perf_counter() - t0) / iters * 1e6)
        out[label] = round(statistics.median(samples), 2)
    t0 = time.perf_counter()
    fresh = make_config(store)
    fresh.build()
    out["first_build_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    await fresh.aclose()
    await config.aclose()
    return out


def git_state() -> str:
    """The commit measured, and whether the kernel/plugins had uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(HERE.parent), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return head + (" + uncommitted changes under src/" if dirty else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", default="memory", help="memory, or a store URL")
    ap.add_argument("--w1-calls", type=int, default=1000)
    ap.add_argument("--w1-budget", type=float, default=1e9, help="seconds; W1 stops past this")
    ap.add_argument("--w2-sessions", type=int, default=200)
    ap.add_argument("--w2-calls", type=int, default=5)
    ap.add_argument("--w2-inflight", type=int, default=50)
    ap.add_argument("--w3", action="store_true", help="cold resume in fresh processes")
    ap.add_argument("--w3-reps", type=int, default=3)
    ap.add_argument("--build-iters", type=int, default=2000)
    ap.add_argument("--skip", default="", help="comma list of w1,w2,build to skip")
    ap.add_argument("--json", help="write the results here (default bench/results/<store>.json)")
    ap.add_argument("--label", help="name of the result (default: the store's scheme)")
    ap.add_argument(
        "--times", help="write W1's per-call ms here (default results/<label>.w1times.json)"
    )
    ap.add_argument("--w3-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--profile", help="with --w3-child: write a cProfile of the cold call here")
    a = ap.parse_args()

    if a.w3_child:
        print(json.dumps(asyncio.run(w3_child(a.store, a.n, a.profile))))
        return

    skip = set(filter(None, a.skip.split(",")))
    label = a.label or probe_for(a.store).kind
    out: dict[str, Any] = {
        "label": label,
        "store": a.store,
        "python": platform.python_version(),
        "machine": f"{platform.node()} {os.cpu_count()} cpu",
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "loadavg_start": os.getloadavg(),
        "git": git_state(),
    }
    RESULTS.mkdir(exist_ok=True)
    if "build" not in skip:
        out["build"] = asyncio.run(build_cost(a.store, a.build_iters))
        print(f"[{label}] build {json.dumps(out['build'])}", flush=True)
    if "w1" not in skip:
        w1, times = asyncio.run(run_w1(a.store, a.w1_calls, a.w1_budget))
        out["w1"] = w1
        times_path = Path(a.times) if a.times else RESULTS / f"{label}.w1times.json"
        times_path.write_text(json.dumps([round(t * 1000, 3) for t in times]))
        print(f"[{label}] W1 {json.dumps(w1)}", flush=True)
    if "w2" not in skip:
        out["w2"] = asyncio.run(run_w2(a.store, a.w2_sessions, a.w2_calls, a.w2_inflight))
        print(f"[{label}] W2 {json.dumps(out['w2'])}", flush=True)
    if a.w3 and a.store != "memory":
        base = out.get("w1", {}).get("calls_done", a.w1_calls)
        out["w3"] = run_w3(a.store, base, a.w3_reps)
        print(f"[{label}] W3 {json.dumps(out['w3'])}", flush=True)
    out["loadavg_end"] = os.getloadavg()
    path = Path(a.json) if a.json else RESULTS / f"{label}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"[{label}] wrote {path}", flush=True)


if __name__ == "__main__":
    main()
