"""Readers against writers in flight: never a commit its writer may still cut back, never
blocked behind a writer, never an older version than one acknowledged."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import CorruptState, StorageDurabilityError
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import Fence
from hookagent_store_jsonfile.localcore import LocalCore

from .test_protocol import key_dir, the_log

K = "agent_state"


def core(root: Path, cache_slots: int = 0) -> LocalCore:
    return LocalCore(root, sweep_after=None, cache_slots=cache_slots, writers="multi")


def grow(store: LocalCore, text: str) -> int:
    got = store.get("u", "s", K)
    state = got.state or AgentState("s", "u")
    state.context.append(Msg.user(text))
    return store.save("u", "s", state, got.version, K, None)


def in_thread(func: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(func())
        except BaseException as exc:  # handed to the test
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_a_reader_never_sees_a_frame_whose_fsync_then_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame is written but its fsync fails and it is truncated: a reader during that
    window returns the version before it (the shared-lock / hint guarantee), no rollback."""
    w = core(tmp_path, 4)
    grow(w, "a")
    got = w.get("u", "s", K)
    assert got.state is not None
    got.state.context.append(Msg.user("b"))
    inside, release = threading.Event(), threading.Event()

    def failing(fd: int) -> None:
        inside.set()
        release.wait(30)
        raise OSError(errno.EIO, "EIO")

    monkeypatch.setattr(os, "fsync", failing)
    writer, res = in_thread(lambda: w.save("u", "s", got.state, got.version, K, None))
    assert inside.wait(30)
    reader, seen = in_thread(lambda: core(tmp_path).get("u", "s", K).version)
    reader.join(30)  # must not wait for the writer (it would wait forever: never released)
    release.set()
    writer.join(30)
    monkeypatch.undo()
    assert isinstance(res[0], StorageDurabilityError)
    assert seen == [1]
    assert core(tmp_path).get("u", "s", K).version == 1


def test_a_stalled_writer_does_not_block_readers(tmp_path: Path) -> None:
    """A writer holding the flock mid-append (slow fsync, stopped process): readers return the
    acknowledged state at once, instead of filling the thread pool while they wait."""
    w = core(tmp_path, 4)
    grow(w, "a")
    grow(w, "b")  # an append: the hint now records its end
    log = the_log(tmp_path)
    lk = os.open(key_dir(tmp_path).parent / ".lock", os.O_RDWR)
    try:
        fcntl.flock(lk, fcntl.LOCK_EX)
        with open(log, "ab") as f:  # a complete-looking frame start, never fsynced
            f.write(b"HAJD" + b"\0" * 10)
        for cache in (0, 4):
            reader, seen = in_thread(lambda c=cache: core(tmp_path, c).get("u", "s", K).version)
            reader.join(30)
            assert seen == [2], "a reader waited for the writer's lock"
    finally:
        os.close(lk)


def test_a_commit_beyond_the_hint_is_fsynced_before_it_is_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer killed between its write and its fsync leaves a complete frame the hint does not
    cover: a reader that returns it fsyncs it first (reads return only durable versions)."""
    w = core(tmp_path, 4)
    grow(w, "a")
    grow(w, "b")
    hint = (key_dir(tmp_path) / ".end").read_bytes()
    grow(w, "c")
    (key_dir(tmp_path) / ".end").write_bytes(hint)  # as if killed before the hint was written
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    assert core(tmp_path).get("u", "s", K).version == 3
    assert synced, "a commit beyond the hint was returned without an fsync"


def test_a_warm_reader_fails_closed_when_acknowledged_commits_are_cut_off(
    tmp_path: Path,
) -> None:
    """Cut back to exactly the size a reader has cached: the hint shows commits acknowledged
    beyond it, so the warm reader fails closed like a fresh one (not an older version)."""
    w, r = core(tmp_path, 4), core(tmp_path, 4)
    grow(w, "a")
    grow(w, "b")
    assert r.get("u", "s", K).version == 2
    size = the_log(tmp_path).stat().st_size
    assert (grow(w, "c"), grow(w, "d")) == (3, 4)
    os.truncate(the_log(tmp_path), size)
    with pytest.raises(CorruptState):
        core(tmp_path, 4).get("u", "s", K)
    with pytest.raises(CorruptState):
        r.get("u", "s", K)


@pytest.mark.parametrize("name", [".end", "head", "../.fence"])
def test_a_planted_fifo_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    """A FIFO in place of a file read whole would block its opener (inside the exclusive flock
    for a writer) forever: it is opened non-blocking and refused as not a regular file."""
    w = core(tmp_path, 4)
    grow(w, "a")
    grow(w, "b")
    path = key_dir(tmp_path) / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    got = AgentState("s", "u")
    got.context.extend([Msg.user("a"), Msg.user("b"), Msg.user("c")])
    fence = Fence(1, "me") if name == "../.fence" else None
    for op in (
        lambda: w.get("u", "s", K),
        lambda: core(tmp_path).get("u", "s", K),
        lambda: w.save("u", "s", got, 2, K, fence),
    ):
        t, out = in_thread(op)
        t.join(30)
        assert out, f"blocked on a FIFO at {name}"
        assert not isinstance(out[0], BaseException) or isinstance(out[0], CorruptState), out


def test_a_failed_truncate_after_a_failed_fsync_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the frame of a failed append cannot be cut back, the error says it may be read."""
    w = core(tmp_path, 4)
    grow(w, "a")
    got = w.get("u", "s", K)
    assert got.state is not None
    got.state.context.append(Msg.user("b"))

    def fail(*args: Any) -> None:
        raise OSError(errno.EIO, "EIO")

    monkeypatch.setattr(os, "fsync", fail)
    monkeypatch.setattr(os, "ftruncate", fail)
    with pytest.raises(StorageDurabilityError) as info:
        w.save("u", "s", got.state, got.version, K, None)
    assert any("read it as committed" in n for n in getattr(info.value, "__notes__", []))


def test_a_child_forked_while_a_reader_holds_the_lock_does_not_keep_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fork() while a reader thread holds the slot's flock shared: the child closes its copy,
    so the lock is free once the parent's reader is done (writers are not blocked by it)."""
    import signal

    from hookagent_store_jsonfile import posixio

    w = core(tmp_path, 4)
    grow(w, "a")
    grow(w, "b")
    hint = (key_dir(tmp_path) / ".end").read_bytes()
    grow(w, "c")
    (key_dir(tmp_path) / ".end").write_bytes(hint)  # bytes beyond the hint: read under the lock
    inside, go = threading.Event(), threading.Event()
    real = posixio.pread_exact

    def slow(fd: int, n: int, off: int) -> bytes:
        inside.set()
        go.wait(30)
        return real(fd, n, off)

    monkeypatch.setattr(posixio, "pread_exact", slow)
    reader, seen = in_thread(lambda: core(tmp_path).get("u", "s", K).version)
    assert inside.wait(30)
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: as a multiprocessing worker forked without exec
        os.write(ready_w, b"x")  # (after the at-fork handlers ran)
        threading.Event().wait(30)
        os._exit(0)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"x"  # else the check below could run before the child's
        os.close(ready_r)
        go.set()
        reader.join(30)
        assert seen == [3]
        lk = os.open(key_dir(tmp_path).parent / ".lock", os.O_RDWR)
        try:
            fcntl.flock(lk, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if the child has it
        finally:
            os.close(lk)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
