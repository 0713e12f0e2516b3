#!/usr/bin/env python3
"""Syscalls, fsyncs and CPU per save of the JSON-file store (``LocalCore``, one thread).

    .venv/bin/python bench/probe_file_syscalls.py --dir /tmp/hafile/sys            # CPU, fsyncs
    strace -f -o /tmp/hafile/trace .venv/bin/python bench/probe_file_syscalls.py \\
        --dir /tmp/hafile/sys --trace /tmp/hafile/trace                          # + syscalls

What W2 does to the store per session, in the order the agent does it: a load of the absent
slot, the first save (a new session of an existing user), then four times a warm load and a
save appending 4 messages. Each phase is bracketed by markers (a failing ``stat`` of a
``/@probe-...`` path), so that with ``--trace`` (the strace output file, written by the same
run) the syscalls between them are counted per phase and per name. Without strace it reports
fsyncs (``os.fsync`` wrapped), inodes created per new session, and CPU per phase
(``time.process_time``). Wall time is not measured: on a shared machine it is noise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import turn
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore

U, K = "user-probe", "agent_state"
PHASES = ("first_load", "first_save", "warm_load", "warm_save")


def mark(name: str) -> None:
    try:
        os.stat(f"/@probe-{name}")
    except FileNotFoundError:
        pass


def count_inodes(root: Path) -> int:
    """Distinct inodes under ``root`` (a hard link, as a format-3 head is, counts once)."""
    seen = {(p.lstat().st_dev, p.lstat().st_ino) for p in root.rglob("*")}
    return len(seen) + 1


def run(root: Path, sessions: int, calls: int) -> dict[str, object]:
    core = LocalCore(root, sweep_after=600.0, cache_slots=256, writers="multi")
    fsyncs: Counter[str] = Counter()
    real_fsync = os.fsync
    phase = ["none"]

    def counting_fsync(fd: int) -> None:
        fsyncs[phase[0]] += 1
        real_fsync(fd)

    os.fsync = counting_fsync  # type: ignore[assignment]
    cpu: dict[str, list[float]] = {p: [] for p in PHASES}
    # a warm-up session: the user directory exists, as in W2 after its first session
    core.save(U, "warmup", AgentState("warmup", U), 0, K, None)
    before = count_inodes(root)

    def timed(name: str, func, *args):  # type: ignore[no-untyped-def]
        phase[0] = name
        mark(f"{name}-begin")
        c0 = time.process_time()
        out = func(*args)
        cpu[name].append(time.process_time() - c0)
        mark(f"{name}-end")
        phase[0] = "none"
        return out

    for i in range(sessions):
        sid = f"s{i}"
        got = timed("first_load", core.get, U, sid, K)
        state = AgentState(sid, U)
        state.context.extend(turn(0))
        version = timed("first_save", core.save, U, sid, state, got.version, K, None)
        for n in range(1, calls):
            got = timed("warm_load", core.get, U, sid, K)
            assert got.version == version and got.state is not None
            got.state.context.extend(turn(n))
            version = timed("warm_save", core.save, U, sid, got.state, version, K, None)
    after = count_inodes(root)
    os.fsync = real_fsync  # type: ignore[assignment]
    core.close()
    return {
        "sessions": sessions,
        "calls_per_session": calls,
        "inodes_per_new_session": round((after - before) / sessions, 2),
        "fsyncs_per_op": {p: round(fsyncs[p] / len(cpu[p]), 2) for p in PHASES},
        "cpu_us_median": {p: round(statistics.median(cpu[p]) * 1e6, 1) for p in PHASES},
        "cpu_us_mean": {p: round(statistics.mean(cpu[p]) * 1e6, 1) for p in PHASES},
    }


_MARK = re.compile(r'"/@probe-(\w+)-(begin|end)"')
_CALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(?:<\.\.\. )?(\w+)")


def parse_trace(path: Path) -> dict[str, object]:
    """Syscalls per phase from an ``strace -f -o`` file (the probe is single-threaded)."""
    counts: dict[str, Counter[str]] = {p: Counter() for p in PHASES}
    ops: Counter[str] = Counter()
    current: str | None = None
    for line in path.read_text().splitlines():
        if "resumed>" in line:
            continue  # the second half of a call strace split in two
        m = _MARK.search(line)
        if m:
            current = m.group(1) if m.group(2) == "begin" else None
            if m.group(2) == "begin":
                ops[m.group(1)] += 1
            continue
        if current is None:
            continue
        c = _CALL.match(line)
        if c and c.group(2) != "clock_gettime":  # (the probe's own process_time calls)
            counts[current][c.group(2)] += 1
    out: dict[str, object] = {}
    for p in PHASES:
        n = max(ops[p], 1)
        out[p] = {
            "syscalls": round(sum(counts[p].values()) / n, 2),
            "by_name": {k: round(v / n, 2) for k, v in counts[p].most_common()},
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--trace", default=None, help="strace -f -o file to parse afterwards")
    ap.add_argument("--parse-only", action="store_true")
    a = ap.parse_args()
    root = Path(a.dir) / "store"
    if not a.parse_only:
        shutil.rmtree(root, ignore_errors=True)
        res = run(root, a.sessions, a.calls)
        print(json.dumps(res, indent=1))
    if a.trace and (a.parse_only or os.environ.get("PROBE_PARSE", "1") == "1"):
        sys.stdout.flush()
        if Path(a.trace).exists():
            print(json.dumps({"syscalls": parse_trace(Path(a.trace))}, indent=1))


if __name__ == "__main__":
    main()
