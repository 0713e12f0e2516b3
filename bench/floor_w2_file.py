#!/usr/bin/env python3
"""The floor of W2 on local disk (issue 15: file store W2 >= 1,000 calls/s), beside ours.

    .venv/bin/python bench/floor_w2_file.py [--dir /tmp/habench-w2floor] [--rounds 3] [--json F]

W2 is 200 new sessions x 5 calls, 50 in flight. Three rows, interleaved round by round, each
in a fresh directory, with calls/s and the process's user and system CPU per call
(``getrusage``: every thread, the kernel's file-system work included):

* **floor**: no framework, plain ``os`` calls, the same asyncio loop and a pool of the file
  store's ``IO_THREADS`` worker threads. A call is the load's check and a durable append: the
  first call of a session creates ``root/<user>/<session>/log`` and makes it durable (write,
  fsync of the file and of the three directories whose entries it added: 4 fsyncs, what
  ours pays); a later call ``stat``s the file (the version check of a cached state), then
  ``open``, ``flock``, ``fstat`` under the lock, the 4 messages' encoded bytes written,
  ``fsync``, ``close``. It is the least a store that must not lose a write pays.
* **floor + kernel**: the floor's I/O after our agent's call on the in-memory store (the
  kernel's CPU, no store work), the 4 messages encoded as ours encodes them: what a file
  store with no cost of its own beyond the floor would reach under our kernel.
* **ours**: ``workload.py``'s W2 on ``LocalJsonFileStore`` (``file://``).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import resource
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import make_config, one_call, turn
from hookagent.codec import encode_msg
from hookagent_store_jsonfile import local
from hookagent_store_jsonfile.local import IO_THREADS
from workload import warm_texts

SESSIONS, CALLS, INFLIGHT = 200, 5, 50
_RUN_INLINE = local.run_inline


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def first_save(root: str, user: str, session: str, data: bytes) -> None:
    """Create the session's log durably: 3 new directory entries, 4 fsyncs."""
    udir = os.path.join(root, user)
    sdir = os.path.join(udir, session)
    os.mkdir(udir)
    os.mkdir(sdir)
    fd = os.open(os.path.join(sdir, "log"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(sdir)
    _fsync_dir(udir)
    _fsync_dir(root)


def warm_call(path: str, data: bytes) -> None:
    """The load's check, then a checked append: stat, open, flock, fstat, write, fsync."""
    os.stat(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.fstat(fd)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the lock


def absent_check(path: str) -> bool:
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    return False


async def run_floor(root: str, with_kernel: bool) -> dict[str, Any]:
    os.makedirs(root)
    pool = ThreadPoolExecutor(IO_THREADS, "floor")
    loop = asyncio.get_running_loop()
    config = make_config("memory") if with_kernel else None
    fixed = {n: b"".join(encode_msg(m) for m in turn(n)) for n in range(1, CALLS + 1)}
    sem = asyncio.Semaphore(INFLIGHT)

    async def session(i: int) -> None:
        user, sid = f"user{i}", f"sess{i}"
        path = os.path.join(root, user, sid, "log")
        for c in range(1, CALLS + 1):
            async with sem:
                if config is not None:
                    await one_call(config, user, sid, c)
                    data = b"".join(encode_msg(m) for m in turn(c))
                else:
                    data = fixed[c]
                if c == 1:
                    await loop.run_in_executor(pool, absent_check, path)
                    await loop.run_in_executor(pool, first_save, root, user, sid, data)
                else:
                    await loop.run_in_executor(pool, warm_call, path, data)

    got = await timed(asyncio.gather(*(session(i) for i in range(SESSIONS))))
    pool.shutdown()
    if config is not None:
        await config.aclose()
    return got


async def run_ours(root: str, threaded: bool = False) -> dict[str, Any]:
    """``threaded``: every save and load whole in a worker thread, as before they ran inline
    (the A/B of ``hops``: the store module's ``run_inline`` swapped for ``run_blocking``)."""
    local.run_inline = local.run_blocking if threaded else _RUN_INLINE  # type: ignore[assignment]
    config = make_config(f"file://{root}")

    async def session(i: int, sem: asyncio.Semaphore) -> None:
        for c in range(1, CALLS + 1):
            async with sem:
                await one_call(config, f"user{i}", f"sess{i}", c)

    sem = asyncio.Semaphore(INFLIGHT)
    got = await timed(asyncio.gather(*(session(i, sem) for i in range(SESSIONS))))
    await config.aclose()
    return got


async def timed(work: Any) -> dict[str, Any]:
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    await work
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    n = SESSIONS * CALLS
    user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    return {
        "calls_per_s": round(n / wall, 1),
        "user_ms_per_call": round(user / n * 1000, 3),
        "sys_ms_per_call": round(system / n * 1000, 3),
        "cpu_over_wall": round((user + system) / wall, 2),
        "voluntary_switches_per_call": round((r1.ru_nvcsw - r0.ru_nvcsw) / n, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/habench-w2floor")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    warm_texts(CALLS + 1)
    rows: dict[str, list[dict[str, Any]]] = {
        "floor": [],
        "floor + kernel": [],
        "ours": [],
        "ours, saves threaded": [],
    }
    for r in range(a.rounds):
        order = list(rows) if r % 2 == 0 else list(reversed(rows))
        for name in order:
            root = os.path.join(a.dir, f"{name.replace(' + ', '-').replace(', ', '-')}-{r}")
            shutil.rmtree(root, ignore_errors=True)
            load = os.getloadavg()[0]
            if name.startswith("ours"):
                got = asyncio.run(run_ours(root, threaded=name != "ours"))
            else:
                got = asyncio.run(run_floor(root, with_kernel=name != "floor"))
            got["load_1min"] = round(load, 2)
            rows[name].append(got)
            shutil.rmtree(root, ignore_errors=True)
            print(f"round {r} {name:15} {json.dumps(got)}", flush=True)
    summary = {
        name: {k: sorted(x[k] for x in got)[len(got) // 2] for k in got[0]}
        for name, got in rows.items()
    }
    print(json.dumps({"median": summary}, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps({"rounds": rows, "median": summary}, indent=1))


if __name__ == "__main__":
    main()
