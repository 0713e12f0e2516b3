"""Saves (and loads of a cached slot) run on the loop's thread; only fsyncs and contended
flocks wait in a worker (``hops``), never blocking the loop, never cancelled half-way."""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from pathlib import Path

import pytest
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore, hops, localcore, localread
from hookagent_store_jsonfile.layout import LOCK, slot_parts
from hookagent_store_jsonfile.mounts import is_local

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _local_tmp(tmp_path: Path) -> None:
    if not is_local(tmp_path):  # (not a skip of a missing service: the premise of the file)
        pytest.fail(f"{tmp_path} must be on a local filesystem for these tests")


def state(n: int, user: str = "u", session: str = "s") -> AgentState:
    st = AgentState(user_id=user, session_id=session)
    st.context.extend(Msg.user(f"m{i}") for i in range(n))
    return st


async def opened(tmp_path: Path) -> LocalJsonFileStore:
    """A store whose root is open (the first save opens it in a worker)."""
    store = LocalJsonFileStore(tmp_path / "store")
    await store.save_if_version("u", "opener", state(1, session="opener"), 0)
    assert store._core.local_disk
    return store


def record_fsync_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        names.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return names


def held_fsync(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """``os.fsync`` held until ``release`` is set; ``entered`` is set once one is waiting."""
    release, entered = threading.Event(), threading.Event()
    real = os.fsync

    def slow_fsync(fd: int) -> None:
        entered.set()
        assert release.wait(10)
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    return release, entered


async def test_a_save_waits_for_its_fsyncs_in_the_disk_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await opened(tmp_path)
    names = record_fsync_threads(monkeypatch)
    await store.save_if_version("u", "s", state(2), 0)  # first save: several fsyncs
    first = len(names)
    assert first >= 2
    st = (await store.get_versioned("u", "s")).state
    assert st is not None
    st.context.append(Msg.user("more"))
    await store.save_if_version("u", "s", st, 1)  # append: one fsync
    assert len(names) == first + 1
    assert all(n.startswith("hookagent-jsonfile-disk") for n in names), names
    got = await store.get_versioned("u", "s")
    assert got.version == 2 and got.state is not None and len(got.state.context) == 3


async def test_the_loop_runs_while_a_save_waits_for_its_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await opened(tmp_path)
    release, entered = held_fsync(monkeypatch)
    save = asyncio.ensure_future(store.save_if_version("u", "s", state(2), 0))
    while not entered.is_set():
        await asyncio.sleep(0.005)  # the loop ticks while the save's fsync waits
    assert not save.done()
    release.set()
    assert await save == 1


async def test_a_native_cancel_during_the_fsync_waits_for_the_save_then_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await opened(tmp_path)
    release, entered = held_fsync(monkeypatch)
    save = asyncio.ensure_future(store.save_if_version("u", "s", state(2), 0))
    while not entered.is_set():
        await asyncio.sleep(0.005)
    save.cancel()
    await asyncio.sleep(0.05)
    assert not save.done()  # held back: the save is half-way, its flock held
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await save
    got = await store.get_versioned("u", "s")
    assert got.version == 1  # the save finished whole


async def test_a_contended_flock_waits_in_a_worker_not_on_the_loop(tmp_path: Path) -> None:
    store = await opened(tmp_path)
    await store.save_if_version("u", "s", state(1), 0)
    sd = os.path.join(store.root, *slot_parts("u", "s"))
    holder = os.open(os.path.join(sd, LOCK), os.O_RDWR)  # another open file: conflicts
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        st = (await store.get_versioned("u", "s")).state
        assert st is not None
        st.context.append(Msg.user("two"))
        save = asyncio.ensure_future(store.save_if_version("u", "s", st, 1))
        for _ in range(10):
            await asyncio.sleep(0.01)  # the loop is not blocked by the waiting save
        assert not save.done()
    finally:
        os.close(holder)  # releases the flock
    assert await save == 2


async def test_an_fsync_failure_inline_poisons_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookagent.errors import StorageDurabilityError

    store = await opened(tmp_path)

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(StorageDurabilityError):
        await store.save_if_version("u", "s", state(2), 0)
    monkeypatch.undo()
    with pytest.raises(StorageDurabilityError, match="poisoned"):
        await store.save_if_version("u", "s2", state(1, session="s2"), 0)


async def test_many_concurrent_saves_of_one_session_serialise(tmp_path: Path) -> None:
    """More waiters than worker threads on one slot's flock: none starves the fsyncs."""
    store = await opened(tmp_path)
    await store.save_if_version("u", "s", state(1), 0)

    async def one(i: int) -> int:
        while True:
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            got.state.context.append(Msg.user(f"c{i}"))
            try:
                return await store.save_if_version("u", "s", got.state, got.version)
            except Exception as exc:  # a lost race: reload and retry
                assert type(exc).__name__ == "VersionConflict", exc

    versions = await asyncio.gather(*(one(i) for i in range(12)))
    assert sorted(versions) == list(range(2, 14))
    final = await store.get_versioned("u", "s")
    assert final.version == 13 and final.state is not None and len(final.state.context) == 13


def test_waits_outside_run_inline_run_in_place() -> None:
    assert not hops.inline()
    me = threading.current_thread()
    assert hops.disk_wait(threading.current_thread) is me
    assert hops.lock_wait(lambda a, b: a + b, 1, 2) == 3


async def test_a_waits_error_is_raised_where_the_operation_waited() -> None:
    seen: list[str] = []

    async def waiter(kind: str, func, *args):  # type: ignore[no-untyped-def]
        seen.append(kind)
        return func(*args)

    def fails() -> None:
        raise OSError(5, "Input/output error")

    def op() -> str:
        assert hops.inline()
        try:
            hops.disk_wait(fails)
        except OSError:
            return "caught " + hops.lock_wait(str.upper, "inside")
        return "no error"

    assert await hops.run_inline(waiter, op) == "caught INSIDE"
    assert seen == ["disk", "lock"]


async def test_a_cold_load_decodes_in_a_worker_and_a_new_sessions_load_stays_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On local disk a load runs inline: looking up an absent slot costs no thread hop, and
    only a load that reads and decodes a whole history waits for it in a worker."""
    store = await opened(tmp_path)
    await store.save_if_version("u", "s", state(30), 0)
    await store.aclose()
    fresh = LocalJsonFileStore(tmp_path / "store")
    await fresh.save_if_version("u", "other", state(1, session="other"), 0)  # root open
    where: dict[str, str] = {}
    real_get, real_decode = localcore.LocalCore.get, localread.decode_messages

    def get(self: localcore.LocalCore, *args: object) -> object:
        where.setdefault("get", threading.current_thread().name)
        return real_get(self, *args)  # type: ignore[arg-type]

    def decode(*args: object) -> object:
        where["decode"] = threading.current_thread().name
        return real_decode(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(localcore.LocalCore, "get", get)
    monkeypatch.setattr(localread, "decode_messages", decode)
    absent = await fresh.get_versioned("u", "nobody")
    assert absent.state is None and where == {"get": threading.current_thread().name}
    cold = await fresh.get_versioned("u", "s")
    assert cold.state is not None and [m.text for m in cold.state.context] == [
        f"m{i}" for i in range(30)
    ]
    assert where["decode"].startswith("hookagent-jsonfile") and where["decode"] != where["get"]
    del where["decode"]
    warm = await fresh.get_versioned("u", "s")
    assert warm.version == cold.version and "decode" not in where  # cached: nothing decoded
