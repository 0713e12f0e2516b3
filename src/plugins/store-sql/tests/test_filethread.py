"""The SQLite file's thread (``filethread.FileThread``): what it kept of
``ThreadPoolExecutor(max_workers=1)`` (one worker, queued work runs before a shutdown takes
effect, nothing accepted after it, a cancelled future's work not run, the interpreter's exit
joins it) and what it added (``post``, no future; a forked child's own thread)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hookagent_store_sql.filethread import FileThread


def test_one_worker_in_order_and_a_shutdown_drains_then_refuses() -> None:
    ft = FileThread("t")
    seen: list[tuple[int, str]] = []
    gate = threading.Event()
    ft.post(lambda: gate.wait(10))
    for i in range(5):
        ft.post(lambda i=i: seen.append((i, threading.current_thread().name)))
    ft.shutdown(wait=False)
    with pytest.raises(RuntimeError):
        ft.post(lambda: None)
    with pytest.raises(RuntimeError):
        ft.submit(lambda: None)
    gate.set()
    ft.join()
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]  # queued before the shutdown: all ran
    assert {name for _, name in seen} == {"t"}


def test_submit_is_a_future_and_a_cancelled_one_does_not_run() -> None:
    ft = FileThread("t")
    gate = threading.Event()
    ran: list[int] = []
    ft.post(lambda: gate.wait(10))
    later = ft.submit(ran.append, 1)
    assert later.cancel()  # still queued: cancelled, never run
    ok = ft.submit(lambda: 2)
    bad = ft.submit(lambda: 1 / 0)
    gate.set()
    assert ok.result(10) == 2
    with pytest.raises(ZeroDivisionError):
        bad.result(10)
    ft.shutdown()
    assert ran == []


def test_an_error_in_posted_work_does_not_stop_the_thread() -> None:
    ft = FileThread("t")
    ft.post(lambda: 1 / 0)
    assert ft.submit(lambda: "still here").result(10) == "still here"
    ft.shutdown()


def test_a_collected_executors_worker_ends() -> None:
    ft = FileThread("collected")
    assert ft.submit(lambda: 1).result(10) == 1
    worker = ft._thread
    assert worker is not None and worker.is_alive()
    del ft
    gc.collect()
    worker.join(10)
    assert not worker.is_alive()


QUEUED_AT_EXIT = """
import sys, threading, time
from hookagent_store_sql.filethread import FileThread

ft = FileThread("t")
ft.post(lambda: time.sleep(0.5))
ft.post(lambda: open(sys.argv[1], "w").write("ran"))  # queued when the main thread ends
"""


@pytest.mark.timeout(120)
def test_work_queued_at_exit_still_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", QUEUED_AT_EXIT, str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "ran"


EXITS = """
import asyncio, sys
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore

async def main():
    store = SQLAgentStateStore("sqlite+aiosqlite:///" + sys.argv[1])
    state = AgentState("s", "u")
    state.context.append(Msg.user("kept"))
    await store.save_if_version("u", "s", state, 0)
    print("saved", flush=True)  # no aclose: the interpreter's exit must still end the thread

asyncio.run(main())
"""


@pytest.mark.timeout(120)
def test_the_interpreter_exits_with_the_thread_running_and_the_save_is_kept(
    tmp_path: Path,
) -> None:
    db = tmp_path / "x.db"
    done = subprocess.run(
        [sys.executable, "-c", EXITS, str(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "saved"
    import sqlite3

    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("SELECT message_count FROM hookagent_slots").fetchone()
    assert count == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_thread_of_its_own() -> None:
    ft = FileThread("t")
    assert ft.submit(lambda: 1).result(10) == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker is not here; post must start its own
        try:
            ok = ft.submit(lambda: threading.current_thread().name).result(10) == "t"
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 1) == b"1"
    finally:
        os.close(read)
        os.waitpid(pid, 0)
        ft.shutdown()
