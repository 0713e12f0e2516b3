"""The cached directory fds (``dircache``): what a save and a load cost in syscalls, and a
directory removed, moved or replaced behind the store's back is noticed, never used."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.layout import slot_parts
from hookagent_store_jsonfile.localcore import LocalCore

K = "agent_state"


def _core(root: Path) -> LocalCore:
    return LocalCore(root, sweep_after=600.0, cache_slots=16, writers="multi")


def _state(sid: str, *texts: str) -> AgentState:
    state = AgentState(sid, "u")
    state.context.extend(Msg.user(t) for t in texts)
    return state


def _texts(core: LocalCore, sid: str) -> list[str] | None:
    got = core.get("u", sid, K)
    return None if got.state is None else [m.text for m in got.state.context]


class Calls:
    """``os.open`` (directories apart), ``os.fsync`` (by inode) and ``os.mkdir`` calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dir_opens = self.file_opens = self.mkdirs = 0
        self.fsynced: list[int] = []
        real_open, real_fsync, real_mkdir = os.open, os.fsync, os.mkdir

        def open_(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
            if flags & os.O_DIRECTORY:
                self.dir_opens += 1
            else:
                self.file_opens += 1
            return real_open(path, flags, *args, **kwargs)

        def fsync(fd: int) -> None:
            self.fsynced.append(os.fstat(fd).st_ino)
            real_fsync(fd)

        def mkdir(*args, **kwargs):  # type: ignore[no-untyped-def]
            self.mkdirs += 1
            return real_mkdir(*args, **kwargs)

        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "mkdir", mkdir)

    def reset(self) -> None:
        self.dir_opens = self.file_opens = self.mkdirs = 0
        self.fsynced.clear()


def test_warm_loads_and_saves_open_no_directory_head_or_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = _core(tmp_path / "r")
    core.save("u", "s", _state("s", "a"), 0, K, None)
    # the key directory (renamed into place) and the hint (made by the first append): once
    got = core.get("u", "s", K)
    assert got.state is not None
    got.state.context.append(Msg.user("m1"))
    assert core.save("u", "s", got.state, 1, K, None) == 2
    calls = Calls(monkeypatch)
    for n in range(2, 5):
        got = core.get("u", "s", K)
        assert got.state is not None
        got.state.context.append(Msg.user(f"m{n}"))
        assert core.save("u", "s", got.state, got.version, K, None) == n + 1
    assert calls.dir_opens == 0  # user, session and key directories: cached fds
    assert len(calls.fsynced) == 3  # one per append: the record file
    assert calls.file_opens == 3 * 2  # a save: the lock and the record file (head, hint held)
    assert _texts(_core(tmp_path / "r"), "s") == ["a", "m1", "m2", "m3", "m4"]


def test_a_first_save_fsyncs_the_root_once_per_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new session of a user this instance created a session for before: four fsyncs (the
    record file that starts with its head, the new key directory, the user directory for the
    new session's entry, the session directory after the rename); the root's is known
    durable. (Five before the first head went into the record file.)"""
    root = tmp_path / "r"
    core = _core(root)
    calls = Calls(monkeypatch)
    core.save("u", "s0", _state("s0", "a"), 0, K, None)
    assert root.stat().st_ino in calls.fsynced  # the first one: the user's entry in the root
    for i in range(1, 4):
        calls.reset()
        assert core.save("u", f"s{i}", _state(f"s{i}", "a"), 0, K, None) == 1
        assert len(calls.fsynced) == 4, calls.fsynced
        assert root.stat().st_ino not in calls.fsynced
        user_dir = root.joinpath(*slot_parts("u", "x")[:-1])
        assert user_dir.stat().st_ino in calls.fsynced
        assert calls.mkdirs == 2  # the session directory and the key's temp directory
    calls.reset()
    fresh = _core(root)  # a new instance knows nothing durable: it fsyncs the root again
    assert fresh.save("u", "s9", _state("s9", "a"), 0, K, None) == 1
    assert root.stat().st_ino in calls.fsynced and len(calls.fsynced) == 5


def test_a_user_directory_recreated_behind_the_store_is_fsynced_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "r"
    core = _core(root)
    core.save("u", "s0", _state("s0", "a"), 0, K, None)
    user_dir = root.joinpath(*slot_parts("u", "x")[:-1])
    shutil.rmtree(user_dir)
    user_dir.mkdir(mode=0o700)  # not made durable by anyone
    calls = Calls(monkeypatch)
    assert core.save("u", "s1", _state("s1", "b"), 0, K, None) == 1
    assert root.stat().st_ino in calls.fsynced


def test_a_session_directory_removed_behind_the_store_is_noticed(tmp_path: Path) -> None:
    root = tmp_path / "r"
    core = _core(root)
    assert core.save("u", "s", _state("s", "a"), 0, K, None) == 1
    assert _texts(core, "s") == ["a"]
    sdir = root.joinpath(*slot_parts("u", "s"))
    shutil.rmtree(sdir)
    assert core.get("u", "s", K).version == 0  # not the removed directory's state
    assert not core.exists("u", "s", K)
    assert core.save("u", "s", _state("s", "b"), 0, K, None) == 1
    assert sdir.is_dir()
    assert _texts(_core(root), "s") == ["b"]


def test_a_session_directory_moved_and_recreated_is_noticed(tmp_path: Path) -> None:
    """Moved away (its inode alive, still held by the cache) and replaced by another
    process's new session: loads and saves go to the directory at the path."""
    root = tmp_path / "r"
    core = _core(root)
    core.save("u", "s", _state("s", "a"), 0, K, None)
    assert _texts(core, "s") == ["a"]
    sdir = root.joinpath(*slot_parts("u", "s"))
    sdir.rename(sdir.with_name("moved"))
    other = _core(root)
    assert other.save("u", "s", _state("s", "x", "y"), 0, K, None) == 1
    assert _texts(core, "s") == ["x", "y"]
    again = core.get("u", "s", K)
    assert again.state is not None
    again.state.context.append(Msg.user("z"))
    assert core.save("u", "s", again.state, again.version, K, None) == 2
    assert _texts(_core(root), "s") == ["x", "y", "z"]
    assert _texts(LocalCore(root / "u" / "moved", sweep_after=None, cache_slots=0,
                            writers="multi"), "s") is None  # fmt: skip


def test_a_symlink_planted_over_a_cached_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "r"
    core = _core(root)
    core.save("u", "s", _state("s", "a"), 0, K, None)
    core.save("u", "t", _state("t", "b"), 0, K, None)
    sdir = root.joinpath(*slot_parts("u", "s"))
    shutil.rmtree(sdir)
    sdir.symlink_to(root.joinpath(*slot_parts("u", "t")))
    with pytest.raises(CorruptState):
        core.get("u", "s", K)
    with pytest.raises(CorruptState):
        core.save("u", "s", _state("s", "c"), 0, K, None)


def test_close_releases_the_cached_fds(tmp_path: Path) -> None:
    core = _core(tmp_path / "r")
    before = len(os.listdir("/proc/self/fd"))
    for i in range(5):
        core.save("u", f"s{i}", _state(f"s{i}", "a"), 0, K, None)
    assert len(os.listdir("/proc/self/fd")) > before  # the directories stay open
    core.close()
    assert len(os.listdir("/proc/self/fd")) == before
    assert _texts(core, "s3") == ["a"]  # reopened on use
    core.close()


def test_a_head_replaced_by_another_instance_is_read_anew(tmp_path: Path) -> None:
    """The held head fd is checked against the name's inode: a rewrite elsewhere (a new head
    renamed over it, a new generation) is seen at once."""
    root = tmp_path / "r"
    a, b = _core(root), _core(root)
    a.save("u", "s", _state("s", "a"), 0, K, None)
    assert _texts(a, "s") == ["a"]
    got = b.get("u", "s", K)
    assert got.state is not None
    edited = _state("s", "x", "y", "z")  # not an append: a rewrite with a new head
    assert b.save("u", "s", edited, got.version, K, None) == 2
    assert _texts(a, "s") == ["x", "y", "z"]
    again = a.get("u", "s", K)
    assert again.state is not None
    again.state.context.append(Msg.user("w"))
    assert a.save("u", "s", again.state, again.version, K, None) == 3
    assert _texts(b, "s") == ["x", "y", "z", "w"]
    assert _texts(_core(root), "s") == ["x", "y", "z", "w"]


def test_no_cache_slots_still_works(tmp_path: Path) -> None:
    """``DirCache(0)`` (a tiny RLIMIT_NOFILE): every fd is the caller's, closed after use."""
    from hookagent_store_jsonfile.dircache import DirCache

    core = _core(tmp_path / "r")
    core.dirs = DirCache(0)
    assert not core.exists("u", "s", K)  # (opens the root, kept)
    before = len(os.listdir("/proc/self/fd"))
    core.save("u", "s", _state("s", "a"), 0, K, None)
    got = core.get("u", "s", K)
    assert got.state is not None
    got.state.context.append(Msg.user("b"))
    assert core.save("u", "s", got.state, 1, K, None) == 2
    assert _texts(core, "s") == ["a", "b"]
    assert len(os.listdir("/proc/self/fd")) == before
