"""A process writing one session's log, for the race and crash tests.

    logworker.py <backend: local|fsspec> <root> <name> <mode> <count>

``race``: prints ``{"ready": name}``, waits for the file ``go`` beside the root, then ``count`` rounds of (acquire as owner ``w``, which fences the other process's
writer, then up to 3 commits); prints one JSON line per commit: ``{"ok": [first, last],
"batch": ...}`` or ``{"fenced": batch}``, ``{"stale": batch}``.
``loop``: acquire once, then commit forever, printing ``{"ok": ...}`` after each commit
returned (the parent kills it at a random moment).
``stall``: one commit, then a second that stops between its commit file and its head
(prints ``{"between": batch}`` and sleeps: the parent SIGKILLs it there).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import fsspec
from hookagent.errors import LogFenced, StalePrefix
from hookagent.sessionlog import LogEvent
from hookagent_store_jsonfile import FsspecJsonFileSessionLog, JsonFileSessionLog
from hookagent_store_jsonfile.loglocal import LocalLogCore
from hookagent_store_jsonfile.logremote import FsspecLogCore

USER, SESSION = "user/1", "race session"


def say(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def stall_before_head() -> None:
    """Make the next head write stop after the commit bytes are durable (then sleep)."""
    real_local = LocalLogCore._write
    real_create = FsspecLogCore.create

    def local_write(
        self: LocalLogCore, ses: Any, doc: Any, head: Any, last: int = -1, **kw: Any
    ) -> None:
        if last > 0:  # a commit's head write (acquire and renew pass no last commit)
            say({"between": head.commit_id})
            time.sleep(3600)
        real_local(self, ses, doc, head, last, **kw)

    def create(self: FsspecLogCore, path: str, data: bytes) -> bool:
        if "/h/" in path and b'"cid":"stall' in data:
            say({"between": "stall"})
            time.sleep(3600)
        return real_create(self, path, data)

    LocalLogCore._write = local_write  # type: ignore[method-assign]
    FsspecLogCore.create = create  # type: ignore[method-assign]


async def main(backend: str, root: str, name: str, mode: str, count: int) -> None:
    if backend == "local":
        log: Any = JsonFileSessionLog(root)
    else:
        log = FsspecJsonFileSessionLog(root, writers="multi", fs=fsspec.filesystem("file"))
    n = 0
    if mode == "race":
        say({"ready": name})  # both start together (the parent creates ``go``): a commit
        go = Path(root).parent / "go"  # is a few syscalls, one process alone would finish
        while not go.exists():  # its rounds before the other one is up
            time.sleep(0.001)
        for _ in range(count):
            w = await log.acquire(USER, SESSION, "w", 30)
            for _ in range(3):
                n += 1
                batch = f"{name}-{n}"
                events = [LogEvent("acme/race", {"p": name, "b": batch, "i": i}) for i in range(2)]
                seq = (await log.head(USER, SESSION)).seq
                try:
                    r = await log.commit(w, batch, seq, events)
                except LogFenced:
                    say({"fenced": batch})
                    break
                except StalePrefix:
                    say({"stale": batch})
                    continue
                say({"ok": [r.first_seq, r.last_seq], "batch": batch})
        return
    w = await log.acquire(USER, SESSION, name, 600)
    seq = w.seq
    if mode == "stall":
        r = await log.commit(w, f"{name}-first", seq, [LogEvent("acme/crash", {"b": "first"})])
        say({"ok": [r.first_seq, r.last_seq], "batch": f"{name}-first"})
        stall_before_head()
        await log.commit(w, "stall", r.last_seq, [LogEvent("acme/crash", {"b": "stall"})])
        return
    while True:  # loop
        n += 1
        batch = f"{name}-{n}"
        events = [LogEvent("acme/crash", {"b": batch, "i": i}) for i in range(1 + n % 3)]
        r = await log.commit(w, batch, seq, events)
        seq = r.last_seq
        say({"ok": [r.first_seq, r.last_seq], "batch": batch})


if __name__ == "__main__":
    backend, root, name, mode, count = sys.argv[1:6]
    anyio.run(main, backend, root, name, mode, int(count))
