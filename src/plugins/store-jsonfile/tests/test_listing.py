"""Local listing at O(page): one scan of the user directory while it is unchanged, and
correct when the index is stale (sessions created or removed by another store handle)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import Fence
from hookagent_store_jsonfile import LocalJsonFileStore, listing
from hookagent_store_jsonfile.layout import id_parts, slot_parts

pytestmark = pytest.mark.anyio
PAST = 1_700_000_000  # seconds: long before the test, so no index is racily clean


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _save(store: LocalJsonFileStore, sid: str, user: str = "u", **kw: Any) -> None:
    state = AgentState(sid, user)
    state.context.append(Msg.user("hi"))
    await store.save_if_version(user, sid, state, 0, **kw)


def _age(root: Path, user: str = "u") -> None:
    """Date the user's directories back (as if the last change was long ago)."""
    udir = root.joinpath(*id_parts(user))
    for path in [udir, *[p for p in udir.rglob("*") if p.is_dir()]]:
        os.utime(path, (PAST, PAST), follow_symlinks=False)


async def _all(store: LocalJsonFileStore, limit: int, user: str = "u") -> list[str]:
    out: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_session_ids(user, limit=limit, cursor=cursor)
        out += page.session_ids
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor


def _scans(store: LocalJsonFileStore) -> int:
    return store._core.index.scans


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of ``os.scandir`` and ``os.stat`` calls."""
    counts = {"scandir": 0, "stat": 0}
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(*a: Any, **k: Any) -> Any:
        counts["scandir"] += 1
        return real_scandir(*a, **k)

    def stat(*a: Any, **k: Any) -> Any:
        counts["stat"] += 1
        return real_stat(*a, **k)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    yield counts


async def test_pages_cost_o_page_once_the_directory_is_indexed(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    store = LocalJsonFileStore(tmp_path / "root")
    sids = [f"s{i:04d}" for i in range(300)]
    for sid in sids:
        await _save(store, sid)
    _age(tmp_path / "root")
    assert await _all(store, 100) == sids
    assert _scans(store) == 1  # one scan for the three pages
    assert await _all(store, 100) == sids
    assert _scans(store) == 1
    counted.update(scandir=0, stat=0)
    page = await store.list_session_ids("u", limit=10, cursor="s0150")
    assert page.session_ids == tuple(sids[151:161]) and page.next_cursor == "s0160"
    assert counted["scandir"] == 0  # no directory is listed for a page
    assert counted["stat"] <= 3 * 11 + 2  # a few per session of the page, none per other
    assert (await store.list_session_ids("u", limit=5, cursor="")).session_ids == tuple(sids[:5])


async def test_a_stale_index_sees_what_another_handle_did(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store, other = LocalJsonFileStore(root), LocalJsonFileStore(root)
    for sid in ("a", "b", "c", "d"):
        await _save(store, sid)
    await _save(store, "e", fence=Fence(1, "o"))
    _age(root)
    assert await _all(store, 2) == ["a", "b", "c", "d", "e"]
    long_id = "L" * 200  # encoded past one path component: under a "+" directory
    await _save(other, long_id)
    await _save(other, "bb")
    await other.delete("u", "c")  # the whole session
    await other.delete("u", "e", "agent_state")  # one key; the fence keeps its directory
    assert root.joinpath(*slot_parts("u", "e")).is_dir()
    assert await _all(store, 2) == ["L" * 200, "a", "b", "bb", "d"]
    _age(root)
    scans = _scans(store)
    await _all(store, 2)
    assert _scans(store) == scans + 1  # indexed again, and kept
    await _save(other, "L" * 199 + "M")  # a new id inside the existing "+" directory only
    assert await _all(store, 2) == ["L" * 200, "L" * 199 + "M", "a", "b", "bb", "d"]


async def test_an_index_of_a_directory_changed_just_before_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Racily clean: a change within the same timestamp tick as the scan leaves the mtime as
    it was. Simulated on a filesystem whose signature is the mtime alone."""
    monkeypatch.setattr(listing, "signature", lambda st: (0, 0, st.st_mtime_ns, 0, 0))
    root = tmp_path / "root"
    store, other = LocalJsonFileStore(root), LocalJsonFileStore(root)
    await _save(store, "a")
    udir = root.joinpath(*id_parts("u"))
    tick = time.time_ns()
    os.utime(udir, ns=(tick, tick))  # a change in this very tick
    assert await _all(store, 10) == ["a"]
    await _save(other, "b")
    os.utime(udir, ns=(tick, tick))  # another change within the same tick: the same mtime
    assert await _all(store, 10) == ["a", "b"]


async def test_directories_without_state_are_skipped_across_pages(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = LocalJsonFileStore(root)
    for sid in ("a", "c", "e"):
        await _save(store, sid)
    for sid in ("b", "d"):  # left by an older hookagent's first save killed half-way
        root.joinpath(*slot_parts("u", sid), *id_parts("agent_state")).mkdir(parents=True)
    _age(root)
    page = await store.list_session_ids("u", limit=2)
    assert page.session_ids == ("a", "c") and page.next_cursor == "c"
    page = await store.list_session_ids("u", limit=2, cursor="c")
    assert page.session_ids == ("e",) and page.next_cursor is None
    assert (await store.list_session_ids("nobody")).session_ids == ()


async def test_sessions_this_instance_created_cost_one_stat_each(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    """Right after a bulk creation: the page trusts the signatures the first saves recorded
    (issue 13: every new session used to be verified with three lstats)."""
    store = LocalJsonFileStore(tmp_path / "root")
    sids = [f"s{i:03d}" for i in range(60)]
    for sid in sids:
        await _save(store, sid)
    counted.update(scandir=0, stat=0)
    assert await _all(store, 100) == sids
    assert counted["stat"] <= len(sids) + 2  # one lstat per session (+ the user directory)
    other = LocalJsonFileStore(tmp_path / "root")  # created by another instance: verified
    counted.update(scandir=0, stat=0)
    assert await _all(other, 100) == sids
    assert counted["stat"] >= 3 * len(sids)


async def test_a_delete_right_after_an_own_creation_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within the clock tick of the creation the timestamps can stay as they were: the link
    count tells the delete apart (the session directory stays: its fence record keeps it)."""
    monkeypatch.setattr(listing, "signature", lambda st: (st.st_dev, st.st_ino, 0, 0, st.st_nlink))
    root = tmp_path / "root"
    store, other = LocalJsonFileStore(root), LocalJsonFileStore(root)
    await _save(store, "a", fence=Fence(1, "o"))
    await _save(store, "b")
    await other.delete("u", "a", "agent_state")
    assert root.joinpath(*slot_parts("u", "a")).is_dir()
    assert await _all(store, 10) == ["b"]


async def test_no_creation_is_trusted_where_links_do_not_count_subdirectories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: dict[str, int]
) -> None:
    monkeypatch.setattr(listing, "counts_subdirs", lambda st: False)  # e.g. btrfs
    store = LocalJsonFileStore(tmp_path / "root")
    for sid in ("a", "b"):
        await _save(store, sid)
    counted.update(scandir=0, stat=0)
    assert await _all(store, 10) == ["a", "b"]
    assert counted["stat"] >= 6  # verified: three lstats each


async def test_the_creations_remembered_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: dict[str, int]
) -> None:
    monkeypatch.setattr(listing, "CREATED_IDS", 2)
    store = LocalJsonFileStore(tmp_path / "root")
    for sid in ("a", "b", "c"):
        await _save(store, sid)
    assert len(store._core.index._created) == 2  # "a", the oldest, is forgotten
    counted.update(scandir=0, stat=0)
    assert await _all(store, 10) == ["a", "b", "c"]
    assert 3 + 2 <= counted["stat"] <= 3 + 2 + 2  # three lstats for "a", one for the others
