#!/usr/bin/env python3
"""The floor of W2 on local disk (issue 15: file store W2 >= 1,000 calls/s), beside ours.

    .venv/bin/python bench/floor_w2_file.py [--dir /tmp/habench-w2floor] [--rounds 3] [--json F]
        [--delete-between]

W2 is 200 new sessions x 5 calls, 50 in flight. Five rows, interleaved round by round, each
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
* **ours, saves threaded** and **ours, fsyncs on the loop**: what-ifs, not store options: every
  save and load whole in a worker (as before session 14), and every fsync run on the loop's
  thread, blocking it (what a thread hop costs: ``bench/notes/file-store.md``, session 15).

No row deletes anything until the last one is done (``--delete-between`` does, as the script
did before session 15): on ext4 without a journal (this VM's disk) a new inode's allocation
skips inodes freed in the last 1-6 minutes (``recently_deleted`` in ``find_inode_bit``), and
after a row's 1,000 files were removed that scan cost the next row up to half its calls/s,
more for the rows that make more inodes per session (ours: 5, the floor's: 3). Deletes are
no part of W2; the leftover tree is removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import make_config, one_call, turn
from hookagent.codec import encode_msg
from hookagent_store_jsonfile import hops, local
from hookagent_store_jsonfile.local import IO_THREADS
from workload import warm_texts

SESSIONS, CALLS, INFLIGHT = 200, 5, 50
_RUN_INLINE, _DISK_WAIT = local.run_inline, hops.disk_wait


def _fsync_here(func: Any, *args: Any) -> Any:
    return func(*args)


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


async def run_ours(root: str, threaded: bool = False, fsync_here: bool = False) -> dict[str, Any]:
    """``threaded``: every save and load whole in a worker thread, as before they ran inline
    (the A/B of ``hops``: the store module's ``run_inline`` swapped for ``run_blocking``).
    ``fsync_here``: each fsync on the loop's thread (``hops.disk_wait`` runs it in place)."""
    local.run_inline = local.run_blocking if threaded else _RUN_INLINE  # type: ignore[assignment]
    hops.disk_wait = _fsync_here if fsync_here else _DISK_WAIT  # type: ignore[assignment]
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


ROWS = ("floor", "floor + kernel", "ours", "ours, saves threaded", "ours, fsyncs on the loop")


def run_row(name: str, root: str) -> dict[str, Any]:
    """One row, in this (fresh) process."""
    warm_texts(CALLS + 1)
    if name.startswith("ours"):
        work = run_ours(root, threaded=name.endswith("threaded"), fsync_here=name.endswith("loop"))
        return asyncio.run(work)
    return asyncio.run(run_floor(root, with_kernel=name != "floor"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/habench-w2floor")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--delete-between", action="store_true",
        help="remove each row's tree right after it (the next row then pays ext4's scan)",
    )  # fmt: skip
    ap.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)  # (a child: one row)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.row:
        print(json.dumps(run_row(a.row, a.root)))
        return
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in ROWS}
    top = os.path.join(a.dir, f"sitting-{os.getpid()}-{int(time.time())}")  # never reused
    for r in range(a.rounds):
        order = list(rows) if r % 2 == 0 else list(reversed(rows))
        for name in order:
            root = os.path.join(top, f"{name.replace(' + ', '-').replace(', ', '-')}-{r}")
            load = os.getloadavg()[0]
            # each row in a fresh process: one process's rows slowed down round by round
            # (user CPU per call +33% by the third round, session 15)
            child = [sys.executable, __file__, "--row", name, "--root", root]
            out = subprocess.run(child, capture_output=True, text=True, check=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            got["load_1min"] = round(load, 2)
            rows[name].append(got)
            if a.delete_between:
                shutil.rmtree(root, ignore_errors=True)
            print(f"round {r} {name:24} {json.dumps(got)}", flush=True)
    shutil.rmtree(top, ignore_errors=True)
    summary = {
        name: {k: sorted(x[k] for x in got)[len(got) // 2] for k in got[0]}
        for name, got in rows.items()
    }
    print(json.dumps({"median": summary}, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps({"rounds": rows, "median": summary}, indent=1))


if __name__ == "__main__":
    main()
