"""G12 containment, G13 injective reversible encoding, symlinks never followed, long ids."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState, History
from hookagent.store.base import UNCONDITIONAL, Fence
from hookagent.store.ids import MAX_ID_LENGTH
from hookagent.testing.corpus import HOSTILE_IDS
from hookagent_store_jsonfile import LocalJsonFileStore
from hookagent_store_jsonfile.layout import CHUNK, id_parts, parts_to_id, slot_parts
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.anyio

ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=MAX_ID_LENGTH,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _safe(parts: list[str]) -> None:
    for p in parts:
        assert p not in (".", "..") and "/" not in p and "\x00" not in p
        assert 0 < len(p.encode()) <= 255


@settings(max_examples=500, deadline=None, database=None)
@given(ids)
def test_parts_round_trip_and_are_path_safe(value: str) -> None:
    parts = id_parts(value)
    _safe(parts)
    assert parts_to_id(parts) == value


@settings(max_examples=500, deadline=None, database=None)
@given(ids, ids, ids, ids)
def test_slot_paths_are_injective(u1: str, s1: str, u2: str, s2: str) -> None:
    if (u1, s1) != (u2, s2):
        assert slot_parts(u1, s1) != slot_parts(u2, s2)
    if u1 != u2:
        assert id_parts(u1) != id_parts(u2)


def test_adversarial_pairs_do_not_collide() -> None:
    pairs = [("a_b", "c"), ("a", "b_c"), ("u1/sessions/s2", "x"), ("u1", "sessions/s2/x")]
    pairs += [(a, b) for a in HOSTILE_IDS[:20] for b in HOSTILE_IDS[:20]]
    paths = {"/".join(slot_parts(u, s)) for u, s in pairs}
    assert len(paths) == len(set(pairs))
    assert all(parts_to_id(id_parts(h)) == h for h in HOSTILE_IDS)
    assert id_parts("") == ["~"] and parts_to_id(["~"]) == ""


def test_long_ids_are_chunked_within_name_limits() -> None:
    longest = "\U0001f600" * MAX_ID_LENGTH  # 4 UTF-8 bytes each, 12 encoded characters
    parts = id_parts(longest)
    assert len(parts) == -(-len(longest.encode()) * 3 // CHUNK)
    _safe(parts)
    assert parts_to_id(parts) == longest
    assert parts_to_id(["abc+"]) is None and parts_to_id(["ab+", "c"]) is None  # not canonical


async def test_hostile_corpus_stays_inside_root(tmp_path: Path) -> None:
    root = tmp_path / "parent" / "root"
    store = LocalJsonFileStore(root)
    every = [*HOSTILE_IDS, "\U0001f600" * MAX_ID_LENGTH]
    for i, hid in enumerate(every):
        state = AgentState(hid, hid, summary=str(i))
        state.context.append(Msg.user(hid))
        await store.save_if_version(hid, hid, state, 0, key=hid)
        await store.save_if_version("u", hid, AgentState(hid, "u", summary=str(i)), 0)
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        for name in dirnames + filenames:
            full = Path(dirpath, name).resolve()
            assert full == root or root in full.parents or full == root.parent, full
    for i, hid in enumerate(every):
        got = await store.get_versioned(hid, hid, key=hid)
        assert (
            got.state is not None
            and got.state.summary == str(i)
            and got.state.context[0].text == hid
        )
        assert (await store.get_versioned("u", hid)).state.summary == str(i)  # type: ignore[union-attr]
        assert (await store.list_session_ids(hid)).session_ids == (hid,)
    listed: list[str] = []
    cursor = None
    while True:
        page = await store.list_session_ids("u", limit=10, cursor=cursor)
        listed += page.session_ids
        if (cursor := page.next_cursor) is None:
            break
    assert listed == sorted(every)
    for hid in every:
        assert await store.delete(hid, hid)
        assert await store.delete("u", hid)
    assert (await store.list_session_ids("u")).session_ids == ()
    assert {p.name for p in root.iterdir()} <= {"u", *(id_parts(h)[0] for h in every)}
    await store.aclose()


# ---------------------------------------------------------------------------- symlinks


async def test_symlink_planted_at_a_user_dir_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    root.mkdir()
    (root / id_parts("victim")[0]).symlink_to(outside, target_is_directory=True)
    store = LocalJsonFileStore(root)
    with pytest.raises(CorruptState, match="symlink"):
        await store.save_if_version("victim", "s", AgentState("s", "victim"), 0)
    with pytest.raises(CorruptState):
        await store.get_versioned("victim", "s")
    assert list(outside.iterdir()) == []


async def test_symlinks_planted_at_files_are_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    outside.write_bytes(b"precious")
    store = LocalJsonFileStore(root)
    state = AgentState("s", "u")
    state.context.append(Msg.user("one"))
    await store.save_if_version("u", "s", state, 0)
    kdir = root.joinpath(*slot_parts("u", "s"), *id_parts("agent_state"))
    log = next(p for p in kdir.iterdir() if p.name.endswith(".log"))
    # a symlink in place of the record file: the append refuses it, nothing is written outside
    log.unlink()
    log.symlink_to(outside)
    with pytest.raises(CorruptState):
        await store.get_versioned("u", "s")
    loaded = AgentState("s", "u")
    loaded.context = History([Msg.user("one")], committed=True)  # as loaded at version 1
    loaded.context.append(Msg.user("two"))
    with pytest.raises(CorruptState):
        await store.save_if_version("u", "s", loaded, 1)
    # a symlink in place of the head and of the lock file
    (kdir / "head").unlink()
    (kdir / "head").symlink_to(outside)
    with pytest.raises(CorruptState):
        await store.get_versioned("u", "s")
    with pytest.raises(CorruptState):
        await store.exists("u", "s")
    lock = root.joinpath(*slot_parts("u", "s"), ".lock")
    lock.unlink()
    lock.symlink_to(outside)
    with pytest.raises(CorruptState):
        await store.save_if_version("u", "s", AgentState("s", "u"), 1)
    assert outside.read_bytes() == b"precious"
    with pytest.raises(CorruptState):  # delete refuses too while the lock is a symlink
        await store.delete("u", "s")
    lock.unlink()
    # then delete removes the links themselves, never their targets
    await store.delete("u", "s")
    assert outside.read_bytes() == b"precious"
    assert not root.joinpath(*slot_parts("u", "s")).exists()


def _snapshot(top: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(top)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
        for p in sorted(top.rglob("*"))
    }


@pytest.mark.parametrize("planted", ["session", "key", ".end", ".fence"])
async def test_symlinks_planted_at_slot_dirs_and_hint_files_are_refused(
    tmp_path: Path, planted: str
) -> None:
    """A symlink at the session dir, the key dir, ``.end`` or ``.fence``: every call that
    would go through it raises ``CorruptState``, and nothing outside the root is touched."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_bytes(b"precious")
    (outside / "head").write_bytes(b"not a head")
    store = LocalJsonFileStore(root)
    state = AgentState("s", "u")
    state.context.append(Msg.user("one"))
    await store.save_if_version("u", "s", state, 0)
    state.context.append(Msg.user("two"))
    await store.save_if_version("u", "s", state, 1)  # an append: writes the .end hint
    sdir = root.joinpath(*slot_parts("u", "s"))
    kdir = sdir / id_parts("agent_state")[0]
    if planted == "session":
        shutil.rmtree(sdir)
        sdir.symlink_to(outside, target_is_directory=True)
    elif planted == "key":
        shutil.rmtree(kdir)
        kdir.symlink_to(outside, target_is_directory=True)
    elif planted == ".end":
        (kdir / ".end").unlink()
        (kdir / ".end").symlink_to(outside / "precious")
    else:
        (sdir / ".fence").symlink_to(outside / "precious")
    before = _snapshot(outside)
    fresh = LocalJsonFileStore(root, cache_slots=0)
    loaded = AgentState("s", "u")  # as loaded at version 2, before the link was planted
    loaded.context = History([Msg.user("one"), Msg.user("two")], committed=True)
    loaded.context.append(Msg.user("three"))
    fenced = fresh.save_if_version("u", "s", AgentState("s", "u"), 2, fence=Fence(3, "o"))
    with pytest.raises(CorruptState, match="symlink"):
        await fenced
    if planted != ".fence":  # (only a fenced save reads the fence)
        with pytest.raises(CorruptState, match="symlink"):
            await fresh.get_versioned("u", "s")
        with pytest.raises(CorruptState, match="symlink"):
            await fresh.save_if_version("u", "s", loaded, 2)
        with pytest.raises(CorruptState, match="symlink"):
            await fresh.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL)
    if planted in ("session", "key"):
        with pytest.raises(CorruptState, match="symlink"):
            await fresh.delete("u", "s", "agent_state")
    assert await fresh.sweep(older_than=0) == 0
    assert (await fresh.list_session_ids("u")).session_ids == (
        () if planted in ("session", "key") else ("s",)
    )
    assert _snapshot(outside) == before
    if planted == "session":
        with pytest.raises(CorruptState, match="symlink"):
            await fresh.delete("u", "s")
    else:  # a delete of the session unlinks the link, never its target
        await fresh.delete("u", "s")
        assert not sdir.exists() and not sdir.is_symlink()
    assert _snapshot(outside) == before
