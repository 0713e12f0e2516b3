"""The async face's worker threads: a cancelled caller still waits for its save to finish
(the save commits or fails as a whole), on asyncio's pool and on anyio's threads."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore
from hookagent_store_jsonfile.localcore import LocalCore

BACKENDS = ["asyncio"]
try:
    import trio  # noqa: F401

    BACKENDS.append("trio")
except ImportError:
    pass


@pytest.fixture(params=BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.anyio
async def test_a_cancelled_save_finishes_before_the_caller_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalJsonFileStore(tmp_path)
    entered, release = threading.Event(), threading.Event()
    finished: list[int] = []
    real = LocalCore.save

    def slow_save(self: LocalCore, *args: Any) -> int:
        entered.set()
        release.wait(30)
        version = real(self, *args)
        finished.append(version)
        return version

    monkeypatch.setattr(LocalCore, "save", slow_save)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_when_in_thread() -> None:
                await anyio.to_thread.run_sync(entered.wait, 30)
                scope.cancel()
                threading.Timer(0.05, release.set).start()

            tg.start_soon(cancel_when_in_thread)
            try:
                await store.save_if_version("u", "s", AgentState("s", "u"), 0)
            finally:
                seen = list(finished)
    assert scope.cancel_called
    assert seen == [1]  # control came back to the cancelled caller only after the save
    monkeypatch.undo()
    assert (await store.get_versioned("u", "s")).version == 1


def _slow_save(monkeypatch: pytest.MonkeyPatch, finished: list[int]) -> threading.Event:
    entered = threading.Event()
    real = LocalCore.save

    def slow_save(self: LocalCore, *args: Any) -> int:
        entered.set()
        time.sleep(0.3)
        version = real(self, *args)
        finished.append(version)
        return version

    monkeypatch.setattr(LocalCore, "save", slow_save)
    return entered


def test_a_natively_cancelled_save_finishes_before_the_caller_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``task.cancel()`` and ``asyncio.wait_for`` (not anyio scopes) wait for the thread too."""
    finished: list[int] = []
    entered = _slow_save(monkeypatch, finished)

    async def main() -> None:
        store = LocalJsonFileStore(tmp_path)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(store.save_if_version("u", "a", AgentState("a", "u"), 0), 0.05)
        assert finished == [1]
        entered.clear()
        task = asyncio.create_task(store.save_if_version("u", "b", AgentState("b", "u"), 0))
        while not entered.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert finished == [1, 1]

    asyncio.run(main())


def test_a_save_at_interpreter_exit_still_commits(tmp_path: Path) -> None:
    """atexit handlers run after the thread pools stopped taking work: no RuntimeError."""
    code = f"""
import asyncio, atexit
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore
async def save():
    return await LocalJsonFileStore({str(tmp_path)!r}).save_if_version(
        "u", "s", AgentState("s", "u"), 0)
atexit.register(lambda: print("saved", asyncio.run(save())))
asyncio.run(LocalJsonFileStore({str(tmp_path)!r}).get_versioned("u", "x"))  # the pool exists
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "saved 1", out.stderr


def test_aclose_with_a_save_in_flight_never_writes_into_another_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``aclose()`` during a save: the save keeps its root fd (closed once it is done), so it
    can never write through a reused fd number into another store's root."""
    from hookagent_store_jsonfile import posixio

    a_root, b_root = tmp_path / "a", tmp_path / "b"
    entered, release = threading.Event(), threading.Event()
    real = posixio.open_dir

    def slow_open_dir(parent: int, name: str, **kw: Any) -> Any:
        if name == "alice":  # the save's first directory (not cached yet)
            entered.set()
            release.wait(30)
        return real(parent, name, **kw)

    monkeypatch.setattr(posixio, "open_dir", slow_open_dir)

    async def main() -> None:
        a, b = LocalJsonFileStore(a_root), LocalJsonFileStore(b_root)
        await a.exists("x", "y")  # opens a's root fd
        task = asyncio.create_task(a.save_if_version("alice", "s", AgentState("s", "alice"), 0))
        while not entered.is_set():
            await asyncio.sleep(0.01)
        await a.aclose()
        await b.exists("x", "y")  # b's root may get the number a's root had
        release.set()
        assert await task == 1
        assert (await b.get_versioned("alice", "s")).version == 0
        assert (await LocalJsonFileStore(a_root).get_versioned("alice", "s")).version == 1

    asyncio.run(main())
