"""Warm loads share one append-only message list per slot (no copy of the history per call),
and a lock-free read that races a delete walks again instead of reporting damage."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile import posixio
from hookagent_store_jsonfile.cache import Cached, HistoryCache
from hookagent_store_jsonfile.layout import id_parts, is_log_name, slot_parts
from hookagent_store_jsonfile.localcore import LocalCore
from hookagent_store_jsonfile.localread import Gone

K = "agent_state"


def _core(root: Path) -> LocalCore:
    return LocalCore(root, sweep_after=600.0, cache_slots=16, writers="multi")


def _turn(state: AgentState, i: int) -> None:
    state.context.extend(Msg.user(f"m{i}.{j}") for j in range(4))


def test_warm_calls_share_one_message_list_and_a_rewrite_leaves_old_loads_alone(
    tmp_path: Path,
) -> None:
    """A warm load and an append cost what the call added: the loaded histories share the
    instance's append-only list, and a rewrite starts a new one, so a history loaded
    before it still reads what it loaded."""
    core = _core(tmp_path / "r")
    state = AgentState("s", "u")
    _turn(state, 0)
    core.save("u", "s", state, 0, K, None)
    got = core.get("u", "s", K)
    assert got.state is not None
    shared = got.state.context._base
    assert isinstance(shared, list)
    for i in range(1, 4):
        _turn(got.state, i)
        core.save("u", "s", got.state, got.version, K, None)
        got = core.get("u", "s", K)
        assert got.state is not None
        assert got.state.context._base is shared  # the same list, appended to
        assert len(got.state.context) == 4 * (i + 1)
    assert got.state is not None
    before = got.state.context
    kept = [m.text for m in before]
    rewritten = core.get("u", "s", K)
    assert rewritten.state is not None
    rewritten.state.context[0] = Msg.user("changed")  # copy-on-write: ``before`` unchanged
    core.save("u", "s", rewritten.state, rewritten.version, K, None)
    assert [m.text for m in before] == kept  # the old load still reads what it loaded
    after = core.get("u", "s", K)
    assert after.state is not None
    assert after.state.context[0].text == "changed"
    assert [m.text for m in after.state.context][1:] == kept[1:]
    assert after.state.context._base is not shared
    _turn(after.state, 9)  # appends after the rewrite grow the new list, not the old one
    core.save("u", "s", after.state, after.version, K, None)
    assert [m.text for m in before] == kept and len(shared) == 16
    fresh = _core(tmp_path / "r").get("u", "s", K)  # and the disk agrees
    assert fresh.state is not None
    assert [m.text for m in fresh.state.context] == [
        "changed",
        *kept[1:],
        *(f"m9.{j}" for j in range(4)),
    ]


@pytest.mark.parametrize("links", [True, False])
def test_a_first_save_leaves_the_next_load_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    """The load after a first save reads no record bytes and decodes nothing: the cache
    holds the saved (frozen) messages at the committed size, as after an append; with hard
    links refused (the two-file first save) too. A fresh instance reads the same from disk."""
    if not links:

        def refused(*args: Any, **kwargs: Any) -> None:
            raise OSError(errno.EPERM, "no hard links here")

        monkeypatch.setattr(os, "link", refused)
    core = _core(tmp_path / "r")
    state = AgentState("s", "u")
    _turn(state, 0)
    saved = list(state.context)
    core.save("u", "s", state, 0, K, None)
    reads: list[int] = []
    real = posixio.pread_exact
    monkeypatch.setattr(
        "hookagent_store_jsonfile.localread.io.pread_exact",
        lambda fd, n, at: reads.append(n) or real(fd, n, at),
    )
    monkeypatch.setattr(
        "hookagent_store_jsonfile.localread.decode_messages",
        lambda *a: pytest.fail("a warm load decoded messages"),
    )
    got = core.get("u", "s", K)
    assert got.version == 1 and got.state is not None and reads == []
    assert all(a is b for a, b in zip(got.state.context, saved, strict=True))
    _turn(got.state, 1)  # and the append from it is the usual one
    assert core.save("u", "s", got.state, 1, K, None) == 2
    monkeypatch.undo()
    fresh = _core(tmp_path / "r").get("u", "s", K)
    assert fresh.state is not None
    assert [m.text for m in fresh.state.context] == [f"m{i}.{j}" for i in (0, 1) for j in range(4)]


def test_a_log_is_extended_once_per_entry() -> None:
    """Two loads extending from the same cached entry (two threads): the first appends to
    the shared list, the second gets a list of its own, so neither reads the other's."""
    cache = HistoryCache(4)
    a, b, c = Msg.user("a"), Msg.user("b"), Msg.user("c")
    hit = Cached("g", 1, 10, (), 1, b"", [a])
    first = cache.extended(hit, [b])
    second = cache.extended(hit, [c, c])
    assert first is hit.log and first == [a, b]
    assert second is not first and second == [a, c, c]


def _slot_key_dir(root: Path) -> Path:
    return root.joinpath(*slot_parts("u", "s"), *id_parts(K))


@pytest.mark.parametrize("recreate", [False, True])
def test_a_read_racing_a_delete_walks_again_from_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recreate: bool
) -> None:
    """Commit b20cc0d, driven step by step: a lock-free read has walked the cached key
    directory and read its head; a delete then renames that directory aside and has removed
    the record file but not yet the head. The reader's held fd follows the moved directory:
    it finds the head without its history, which is not damage. It walks again from the
    root and sees the slot deleted (or, ``recreate``, saved again by another instance)."""
    root = tmp_path / "r"
    core, other = _core(root), _core(root)
    first = AgentState("s", "u")
    _turn(first, 0)
    core.save("u", "s", first, 0, K, None)
    assert core.get("u", "s", K).version == 1  # every directory fd cached; the entry too
    core.cache.clear()  # the read goes to the record file (the racy step)
    real_rmtree, real_load = posixio.rmtree_at, core._load
    left: list[str] = []

    def half_rmtree(parent: int, name: str) -> None:
        # the delete stops after the record file: the head is still in the moved directory
        if left or not name.startswith(".tmp."):  # the key's only: not the session's rest
            if name not in left:  # (the moved key directory stays, head and all)
                real_rmtree(parent, name)
            return
        kd = posixio.open_dir(parent, name, create=False, dur=posixio.Durability())
        assert kd is not None
        try:
            for entry in posixio.listdir_own(kd):
                if is_log_name(entry):
                    posixio.unlink_quiet(kd, entry)
        finally:
            os.close(kd)
        left.append(name)

    gone: list[int] = []

    def racing_load(*args: Any, **kwargs: Any) -> Any:
        if not gone:
            monkeypatch.setattr(posixio, "rmtree_at", half_rmtree)
            assert other.delete("u", "s", K)  # (takes the slot's lock: the read holds none)
            monkeypatch.setattr(posixio, "rmtree_at", real_rmtree)
            if recreate:
                again = AgentState("s", "u")
                again.context.append(Msg.user("new"))
                other.save("u", "s", again, 0, K, None)
        try:
            return real_load(*args, **kwargs)
        except Gone:
            gone.append(1)
            raise

    monkeypatch.setattr(core, "_load", racing_load)
    got = core.get("u", "s", K)
    assert gone == [1]  # the first read did find the head without its history
    if recreate:
        assert got.state is not None and [m.text for m in got.state.context] == ["new"]
    else:
        assert got.state is None and got.version == 0
    assert left  # the delete did stop half-way (its moved directory keeps the head)


def test_a_history_missing_in_place_is_still_damage(tmp_path: Path) -> None:
    """The same walk again from the root finding the same head without its record file:
    ``CorruptState`` (the retry above must not hide a lost history)."""
    root = tmp_path / "r"
    core = _core(root)
    state = AgentState("s", "u")
    _turn(state, 0)
    core.save("u", "s", state, 0, K, None)
    core.cache.clear()
    for p in _slot_key_dir(root).iterdir():
        if is_log_name(p.name):
            p.unlink()
    with pytest.raises(CorruptState, match="history file is missing"):
        core.get("u", "s", K)
