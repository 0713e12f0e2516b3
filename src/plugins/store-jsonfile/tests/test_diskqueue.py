"""The fsyncs of inline saves go through one queue per loop whose workers drain it: fewer
thread hops than fsyncs, every result and error to its own waiter, fsyncs still overlapping."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore, diskqueue, local
from hookagent_store_jsonfile.diskqueue import DiskQueue
from hookagent_store_jsonfile.local import IO_THREADS

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(IO_THREADS, "test-disk")
        self.submits = 0

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self.submits += 1
        return super().submit(*args, **kwargs)


async def test_queued_calls_are_drained_by_at_most_the_limit_of_workers() -> None:
    pool = CountingPool()
    queue = DiskQueue(asyncio.get_running_loop(), lambda: pool, 3)
    release = threading.Event()
    running: list[int] = []

    def call(i: int) -> int:
        running.append(i)
        assert release.wait(10)
        if i == 7:
            raise OSError(5, "EIO for call 7 only")
        return i * 10

    futs = [queue.submit(lambda i=i: call(i)) for i in range(40)]
    for _ in range(500):
        if len(running) == 3:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert len(running) == 3  # three overlap, the rest wait in the queue (no more threads)
    release.set()
    got = await asyncio.gather(*futs, return_exceptions=True)
    assert [g for i, g in enumerate(got) if i != 7] == [i * 10 for i in range(40) if i != 7]
    assert isinstance(got[7], OSError) and "call 7" in str(got[7])
    assert pool.submits == 3  # 40 calls, 3 thread hops
    assert sorted(running) == list(range(40))
    pool.shutdown()


async def test_a_call_queued_as_the_last_worker_leaves_is_never_stranded() -> None:
    """A worker decides to exit and a submit decides whether to start one under the same
    lock, so a call queued at that moment is taken by one or the other: lone calls, each
    submitted as the previous one's worker may be leaving, all finish."""
    pool = CountingPool()
    queue = DiskQueue(asyncio.get_running_loop(), lambda: pool, 4)
    for i in range(300):
        assert await asyncio.wait_for(queue.submit(lambda i=i: i), 5) == i
        if i % 3 == 0:
            await asyncio.sleep(0)  # (varies the moment against the worker's exit)
    assert 1 <= pool.submits <= 300
    pool.shutdown()


async def test_first_saves_in_flight_share_worker_hops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 new sessions saved at once: 250 fsyncs (two waits each: before and after the
    rename), far fewer thread hops, and every session readable from a fresh store."""
    pool = CountingPool()
    monkeypatch.setattr(local, "_disk_pool", lambda: pool)
    fsyncs = [0]
    real = os.fsync

    def counted(fd: int) -> None:
        fsyncs[0] += 1
        real(fd)

    store = LocalJsonFileStore(tmp_path / "store")
    opener = AgentState(user_id="u", session_id="opener")
    await store.save_if_version("u", "opener", opener, 0)  # the root is open: saves inline
    monkeypatch.setattr(os, "fsync", counted)

    async def first(i: int) -> int:
        st = AgentState(user_id=f"u{i}", session_id=f"s{i}")
        st.context.append(Msg.user(f"hello {i}"))
        return await store.save_if_version(f"u{i}", f"s{i}", st, 0)

    assert await asyncio.gather(*(first(i) for i in range(50))) == [1] * 50
    assert fsyncs[0] == 250  # record file, key directory, session and user entries, parent
    assert 1 <= pool.submits < 100, pool.submits  # 100 waits (two per save), fewer hops
    fresh = LocalJsonFileStore(tmp_path / "store")
    for i in range(50):
        got = await fresh.get_versioned(f"u{i}", f"s{i}")
        assert got.state is not None and got.state.context[0].text == f"hello {i}"
    pool.shutdown()


async def test_a_forked_child_gets_a_queue_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child inherits none of the parent's workers: the parent's queue (whose count says
    its workers are running) would never be drained there."""
    loop = asyncio.get_running_loop()
    pool = CountingPool()
    parent = diskqueue.queue_of(loop, lambda: pool, 2)
    assert diskqueue.queue_of(loop, lambda: pool, 2) is parent
    parent._workers = 2  # (as if both were busy when the process forked)
    monkeypatch.setattr(diskqueue.os, "getpid", lambda: parent.pid + 1)
    child = diskqueue.queue_of(loop, lambda: pool, 2)
    assert child is not parent
    assert await asyncio.wait_for(child.submit(lambda: "ran"), 5) == "ran"
    pool.shutdown()


def test_a_finished_loop_and_its_queue_are_not_kept() -> None:
    """The queues are keyed weakly by their loop, and a queue holds its loop weakly: a program
    that runs many loops (a sync twin per call) does not keep every one of them alive."""
    import gc
    import weakref

    async def one_fsync() -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        queue = diskqueue.queue_of(loop, local._disk_pool, 2)
        assert await queue.submit(lambda: 1) == 1
        while queue._workers:  # (the worker has settled the future, not yet left)
            await asyncio.sleep(0.001)
        return loop

    for _ in range(3):
        gone = weakref.ref(asyncio.run(one_fsync()))
        gc.collect()
        assert gone() is None
