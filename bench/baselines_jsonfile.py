#!/usr/bin/env python3
"""Physical limits for the JSON-file store on this disk (workload.md, "Physical limits").

    .venv/bin/python bench/baselines_jsonfile.py [--dir /tmp/habench-jsonfile] [--json out.json]

Measures, side by side in one sitting (medians):

* rewrite: the final 4,000-message history serialised to JSON and written atomically
  (temp file, fsync, rename, directory fsync) - what a snapshot-per-call design pays;
* append: 4 framed messages appended to a file with fsync - the floor for an append design;
* the floor of a correct warm call, no framework (plain ``os`` calls): the version check
  (the log's length is its version: one ``fstat`` of a held descriptor, what a load of an
  unchanged slot must do) and a checked append (``flock``, ``fstat`` again under the lock,
  the append, ``fsync``, unlock) - what a save that must not lose a concurrent writer's
  messages pays at least;
* the store itself (``LocalCore``, no agent): a save appending 4 messages to a 4-message and
  to a 4,000-message history (append + fsync, head temp + fsync, rename, directory fsync),
  a warm load (head only), a cold load of 4,000 messages in a fresh store instance, and the
  bytes it keeps on disk against the raw message text.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_texts import call_id, final_text, tool_text, user_text
from hookagent.codec import encode_msg, encode_state
from hookagent.messages import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore
from hookagent_store_jsonfile.records import frame

U, S, K = "user-w1", "sess-w1", "agent_state"


def turn(n: int) -> list[Msg]:
    return [
        Msg.user(user_text(n)),
        Msg.assistant([ToolUseBlock(call_id(n), "lookup", {"key": n})]),
        Msg("tool", [ToolResultBlock(call_id(n), "lookup", (TextBlock(tool_text(n)),), "success")]),
        Msg.assistant(final_text(n)),
    ]


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def atomic_rewrite(dirpath: Path, data: bytes) -> None:
    tmp = dirpath / f".tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, dirpath / "state.json")
    dfd = os.open(dirpath, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="habench-jsonfile-"))
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    out: dict[str, object] = {"dir": str(base)}
    history = [m for n in range(1, 1001) for m in turn(n)]
    # the message content: user, tool result and final texts (200 characters each per turn)
    raw_text = sum(
        len((user_text(n) + tool_text(n) + final_text(n)).encode()) for n in range(1, 1001)
    )

    # 1. physical limits
    state = AgentState(S, U)
    state.context.extend(history)
    t = time.perf_counter()
    doc = encode_state(state)
    out["serialise_4000_ms"] = round((time.perf_counter() - t) * 1000, 2)
    (base / "rewrite").mkdir()
    samples = []
    for _ in range(20):
        t = time.perf_counter()
        atomic_rewrite(base / "rewrite", encode_state(state))
        samples.append(time.perf_counter() - t)
    out["rewrite_4000_atomic_ms"] = median_ms(samples)
    out["rewrite_bytes"] = len(doc)
    fd = os.open(base / "append.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples = []
    for n in range(1, 101):
        t = time.perf_counter()
        os.write(fd, frame([encode_msg(m) for m in turn(n)]))
        os.fsync(fd)
        samples.append(time.perf_counter() - t)
    os.close(fd)
    out["append_4_fsync_ms"] = median_ms(samples)
    fd = os.open(base / "floor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    seen = os.fstat(fd).st_size
    checks, floor, cpu = [], [], []
    for n in range(1, 101):
        c, t = time.process_time(), time.perf_counter()
        if os.fstat(fd).st_size != seen:  # the load: has anyone written since?
            raise RuntimeError("the floor's log changed under it")
        t1 = time.perf_counter()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_size != seen:  # the save's compare, under the lock
                raise RuntimeError("the floor's log changed under it")
            os.write(fd, frame([encode_msg(m) for m in turn(n)]))
            os.fsync(fd)
            seen = os.fstat(fd).st_size
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        floor.append(time.perf_counter() - t)
        checks.append(t1 - t)
        cpu.append(time.process_time() - c)
    os.close(fd)
    out["floor_check_ms"] = median_ms(checks)
    out["floor_check_and_append_ms"] = median_ms(floor)
    out["floor_check_and_append_cpu_ms"] = median_ms(cpu)

    # 2. the store
    core = LocalCore(base / "store", sweep_after=None, cache_slots=16, writers="multi")

    def save_turn(n: int) -> tuple[float, float]:
        t0 = time.perf_counter()
        got = core.get(U, S, K)
        t1 = time.perf_counter()
        st = got.state or AgentState(S, U)
        st.context.extend(turn(n))
        core.save(U, S, st, got.version, K, None)
        return t1 - t0, time.perf_counter() - t1

    early = [save_turn(n) for n in range(1, 21)]
    for n in range(21, 981):
        save_turn(n)
    late = [save_turn(n) for n in range(981, 1001)]
    out["store_load_warm_ms_at_4"] = median_ms([a for a, _ in early])
    out["store_save_ms_at_4"] = median_ms([b for _, b in early])
    out["store_load_warm_ms_at_4000"] = median_ms([a for a, _ in late])
    out["store_save_ms_at_4000"] = median_ms([b for _, b in late])
    cold = []
    for _ in range(5):
        fresh = LocalCore(base / "store", sweep_after=None, cache_slots=16, writers="multi")
        t = time.perf_counter()
        got = fresh.get(U, S, K)
        cold.append(time.perf_counter() - t)
        assert got.state is not None and len(got.state.context) == 4000
    out["store_cold_load_4000_ms"] = median_ms(cold)
    stored = sum(p.stat().st_size for p in (base / "store").rglob("*") if p.is_file())
    out["store_bytes"] = stored
    out["raw_text_bytes"] = raw_text
    out["store_over_raw_text"] = round(stored / raw_text, 2)
    out["encoded_msgs_bytes"] = sum(len(encode_msg(m)) for m in history)
    out["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
