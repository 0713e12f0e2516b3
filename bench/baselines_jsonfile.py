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
* the floor of an EVENT_LOG W1 call on the file log (``LogFloor``: the acquire's unsynced
  head write and 4 fenced commits of the records a warm W1 call writes, one fdatasync
  each), interleaved with the LEGACY floor above, with CPU; and the kernel's cost (a W1
  call's CPU on the memory store and on the memory log, ``kernel_cpu_ms``), so that the
  ratio of floors with the kernel's cost added is printed (``floor_ratio_with_kernel``);
* the store itself (``LocalCore``, no agent): a save appending 4 messages to a 4-message and
  to a 4,000-message history (append + fsync, head temp + fsync, rename, directory fsync),
  a warm load (head only), a cold load of 4,000 messages in a fresh store instance, and the
  bytes it keeps on disk against the raw message text.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import turn
from bench_texts import final_text, tool_text, user_text
from hookagent.codec import encode_msg, encode_state
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore
from hookagent_store_jsonfile.records import frame

U, S, K = "user-w1", "sess-w1", "agent_state"


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


def log_call_shape(where: Path, calls: int = 6) -> tuple[list[bytes], bytes]:
    """The 4 records and the head slot record one warm W1 call writes on the file log
    (EVENT_LOG, format 2): ``calls`` calls of the bench's agent, the last call's records
    and the head read back from the session's file."""
    import asyncio

    from bench_agent import one_call
    from hookagent.store.ids import slot_name
    from hookagent_store_jsonfile import logsegment
    from hookagent_store_jsonfile.logfiles import SLOT, head_record_size
    from session_log import config_for

    shutil.rmtree(where, ignore_errors=True)
    config = config_for("log", f"file://{where}")

    async def run() -> None:
        for n in range(1, calls + 1):
            await one_call(config, "bench", "shape", n)
        await config.aclose()

    asyncio.run(run())
    from hookagent_store_jsonfile import JsonFileSessionLog

    core = JsonFileSessionLog(where)._core
    name = slot_name("bench", "shape", "log")

    def read(ses: object) -> tuple[list[bytes], bytes]:
        doc = core._read(ses, name)  # type: ignore[arg-type]
        idx = logsegment.index(ses, doc, name)  # type: ignore[arg-type]
        if len(idx.offsets) != 4 * calls:
            raise RuntimeError(f"{len(idx.offsets)} records for {calls} calls, not 4 a call")
        bounds = [*idx.offsets[-4:], idx.end]
        raw = os.pread(ses.hd, bounds[-1] - bounds[0], bounds[0])  # type: ignore[attr-defined]
        recs = [raw[a - bounds[0] : b - bounds[0]] for a, b in itertools.pairwise(bounds)]
        at = (int(doc["n"]) % 2) * SLOT
        head = os.pread(ses.hd, SLOT, at)  # type: ignore[attr-defined]
        return recs, head[: head_record_size(head)]

    got = core.locked("bench", "shape", read, create=False, exclusive=False, absent=list)
    core.close()
    return got  # type: ignore[return-value]


class LogFloor:
    """The floor of an EVENT_LOG W1 call on local disk, no framework (plain ``os`` calls on
    one file, as format 2 lays it out): the load's acquire (``flock``, ``pread`` of the two
    head slots, ``pwrite`` of one, unlock: unsynced) and 4 fenced commits, each ``flock``,
    ``pread`` of the head slots (the fence is in the head), ``pwrite`` of the record (the
    bytes the log writes), ``pwrite`` of the head slot, **one fdatasync**, unlock."""

    def __init__(self, path: Path, records: list[bytes], slot: bytes) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.records, self.slot, self.n = records, slot, 0
        self.end = 2 * 4096
        os.pwrite(self.fd, slot, 0)
        os.fdatasync(self.fd)

    def _head(self) -> None:
        self.n += 1
        os.pwrite(self.fd, self.slot, (self.n % 2) * 4096)

    def call(self) -> tuple[float, float]:
        fd = self.fd
        c, t = time.process_time(), time.perf_counter()
        fcntl.flock(fd, fcntl.LOCK_EX)  # the acquire
        try:
            os.pread(fd, 2 * 4096, 0)
            self._head()
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        for record in self.records:  # the 4 commits
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                os.fstat(fd)  # (the delete check every locked step makes)
                os.pread(fd, 2 * 4096, 0)
                os.pwrite(fd, record, self.end)
                self.end += len(record)
                self._head()
                os.fdatasync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        return time.perf_counter() - t, time.process_time() - c

    def close(self) -> None:
        os.close(self.fd)


def kernel_cpu_ms(calls: int = 300, skip: int = 50) -> dict[str, float]:
    """The CPU a W1 call costs with no I/O: the bench's agent on the memory store (LEGACY)
    and on the memory log (EVENT_LOG, the recorder's CPU included), interleaved in blocks
    of 25, minimum of the calls after ``skip``."""
    import asyncio

    from bench_agent import one_call
    from session_log import config_for

    configs = {
        "kernel_legacy_memory_cpu_ms": config_for("legacy", "memory"),
        "kernel_event_log_memory_cpu_ms": config_for("log", "memory://habench-floor"),
    }
    cpu: dict[str, list[float]] = {k: [] for k in configs}

    async def run() -> None:
        for start in range(1, calls + 1, 25):
            for k, config in configs.items():
                for n in range(start, start + 25):
                    c = time.process_time()
                    await one_call(config, "bench", "floor-kernel", n)
                    if n > skip:
                        cpu[k].append(time.process_time() - c)
        for config in configs.values():
            await config.aclose()

    asyncio.run(run())
    return {k: round(min(v) * 1000, 3) for k, v in cpu.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--no-kernel",
        action="store_true",
        help="skip the memory-store CPU per call (the kernel's cost)",
    )
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
    records, slot = log_call_shape(base / "shape")
    log_floor = LogFloor(base / "floor-log.head", records, slot)
    checks, floor, cpu = [], [], []
    log_wall, log_cpu = [], []
    for n in range(1, 101):
        if n % 2:  # interleaved, each first in every other round
            w, c_ = log_floor.call()
            log_wall.append(w)
            log_cpu.append(c_)
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
        if not n % 2:
            w, c_ = log_floor.call()
            log_wall.append(w)
            log_cpu.append(c_)
    os.close(fd)
    log_floor.close()
    out["floor_check_ms"] = median_ms(checks)
    out["floor_check_and_append_ms"] = median_ms(floor)
    out["floor_check_and_append_cpu_ms"] = median_ms(cpu)
    out["floor_event_log_w1_call_ms"] = median_ms(log_wall)
    out["floor_event_log_w1_call_cpu_ms"] = median_ms(log_cpu)
    out["floor_event_log_w1_record_bytes"] = [len(r) for r in records]
    out["floor_event_log_w1_head_slot_bytes"] = len(slot)
    out["floor_ratio_event_log_over_legacy"] = round(
        out["floor_event_log_w1_call_ms"] / out["floor_check_and_append_ms"], 2
    )
    if not args.no_kernel:
        k = kernel_cpu_ms()
        out.update(k)
        fl, fe = out["floor_check_and_append_ms"], out["floor_event_log_w1_call_ms"]
        kl, ke = k["kernel_legacy_memory_cpu_ms"], k["kernel_event_log_memory_cpu_ms"]
        # the best an EVENT_LOG call could do: LEGACY's own CPU plus the log floor's syscalls
        out["floor_ratio_with_kernel"] = round((kl + fe) / (kl + fl), 2)
        # with the recorder's CPU as it is today (the memory log's call)
        out["floor_ratio_with_kernel_and_recorder"] = round((ke + fe) / (kl + fl), 2)

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
