"""G6: 8 processes doing compare-and-set on one slot, 8 x 250 attempts: 0 lost updates.

Checker (reliability-plan §3): no version acknowledged twice; final version == 1 + #acks (the
slot is created at version 1 first); every acknowledged token exactly once in the final
history; no token of a lost CAS stored. Negative control: a naive read-modify-write loses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import fsspec
import pytest
from hookagent.state import AgentState
from hookagent_store_jsonfile import FsspecJsonFileStore, LocalJsonFileStore

WORKER = Path(__file__).parent / "helpers" / "casworker.py"
N, ATTEMPTS = 8, 250
U, S = "cas-user", "cas-session"


def run_workers(
    mode: str, root: Path, ctrl: Path, n: int = N, attempts: int = ATTEMPTS
) -> list[tuple[str, int | None]]:
    ctrl.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), mode, str(root), str(ctrl), str(w), str(attempts)],
            stderr=subprocess.PIPE,
        )
        for w in range(n)
    ]
    (ctrl / "go").touch()
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err.decode()
    ops: list[tuple[str, int | None]] = []
    for w in range(n):
        for line in (ctrl / f"out{w}").read_text().splitlines():
            token, version = json.loads(line)
            ops.append((token, version))
    assert len(ops) == n * attempts
    return ops


def open_store(root: Path, kind: str) -> Any:
    if kind == "fsspec":
        return FsspecJsonFileStore(str(root), writers="multi", fs=fsspec.filesystem("file"))
    return LocalJsonFileStore(root)


@pytest.mark.parametrize(("kind", "n", "attempts"), [("store", N, ATTEMPTS), ("fsspec", 4, 100)])
def test_cas_across_processes_loses_nothing(
    tmp_path: Path, kind: str, n: int, attempts: int
) -> None:
    """``store``: the local store (flock). ``fsspec``: the multi-writer fsspec protocol
    (exclusive create of versioned heads) on the local fsspec filesystem."""
    root = tmp_path / "root"

    async def create() -> None:
        store = open_store(root, kind)
        assert await store.save_if_version(U, S, AgentState(S, U), 0) == 1
        await store.aclose()

    anyio.run(create)
    ops = run_workers(kind, root, tmp_path / "ctrl", n=n, attempts=attempts)

    async def final() -> tuple[int, list[str]]:
        store = open_store(root, kind)
        got = await store.get_versioned(U, S)
        await store.aclose()
        assert got.state is not None
        return got.version, [m.text for m in got.state.context]

    version, history = anyio.run(final)
    acked = [(t, v) for t, v in ops if v is not None]
    lost = {t for t, v in ops if v is None}
    versions = Counter(v for _, v in acked)
    stored = Counter(history)
    print(f"{kind}: attempts={len(ops)} acks={len(acked)} conflicts={len(lost)} final={version}")
    assert len(acked) > n  # real contention, and real progress
    assert [v for v, c in versions.items() if c > 1] == []  # rule 1: no version acked twice
    assert version == 1 + len(acked)  # rule 2
    assert all(stored[t] == 1 for t, _ in acked)  # rule 3: every ack exactly once
    assert not lost & set(stored)  # rule 4: no phantom (lost CAS) token stored
    assert len(history) == len(acked)
    # the history order is the version order
    assert history == [t for t, _ in sorted(acked, key=lambda tv: tv[1])]


def test_negative_control_naive_rmw_loses_updates(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    ops = run_workers("naive", root, tmp_path / "ctrl")
    stored = set(json.loads((root / "naive.json").read_text())["tokens"])
    lost = [t for t, _ in ops if t not in stored]
    print(f"naive: {len(lost)} of {len(ops)} acknowledged updates lost")
    assert lost, "the checker failed to see a naive writer's lost updates"


def test_saves_deletes_and_reads_racing_across_processes(tmp_path: Path) -> None:
    """Deletes remove the slot directory and its lock file while others wait on that lock."""
    root = tmp_path / "root"
    ops = run_workers("mixed", root, tmp_path / "ctrl", n=6, attempts=60)
    assert {op for op, _ in ops} >= {"save", "delete", "get", "list"}

    async def final() -> None:
        store = LocalJsonFileStore(root)
        got = await store.get_versioned(U, S)
        listed = (await store.list_session_ids(U)).session_ids
        assert listed == ((S,) if got.version or await store.exists(U, S, key="obs") else ())
        await store.aclose()

    anyio.run(final)
    assert not list(root.rglob(".tmp.*"))


def test_a_directory_removed_while_created_is_a_lost_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mkdir -p on a directory filesystem can see EEXIST and then no directory (a rewrite
    removed a superseded generation in between): retried, then reported as the directory
    being gone, which the save treats as a lost compare-and-set, never as a crash."""
    from hookagent_store_jsonfile.remotecas import CasCore

    fs = fsspec.filesystem("file")
    core = CasCore(fs, str(tmp_path), cache_slots=4)
    real = fs.makedirs
    races = [True]

    def racing_makedirs(path: str, exist_ok: bool = False) -> None:
        if races and races.pop():
            raise FileExistsError(path)
        real(path, exist_ok=exist_ok)

    monkeypatch.setattr(fs, "makedirs", racing_makedirs)
    core.create(f"{tmp_path}/g1/seg", b"x")  # one race, then it succeeds
    assert (tmp_path / "g1" / "seg").read_bytes() == b"x"

    def always_racing(path: str, exist_ok: bool = False) -> None:
        raise FileExistsError(path)

    monkeypatch.setattr(fs, "makedirs", always_racing)
    with pytest.raises(FileNotFoundError):
        core.create(f"{tmp_path}/g2/seg", b"y")


@pytest.mark.parametrize("change", ["append", "rewrite"])
@pytest.mark.parametrize("version", [1, 2])
def test_a_slot_recreated_at_the_same_version_is_not_written_onto(
    tmp_path: Path, change: str, version: int
) -> None:
    """ABA: A loads version ``version``; B deletes the slot and saves it again up to the same
    version; A's save at that version is a VersionConflict (it used to append A's message
    onto B's history), and after a reload it goes through."""
    from hookagent.errors import VersionConflict
    from hookagent.messages import Msg

    async def main() -> None:
        a, b = LocalJsonFileStore(tmp_path), LocalJsonFileStore(tmp_path)
        for who, store in (("A", a), ("B", b)):
            if who == "B":
                await b.delete(U, S)
            for v in range(version):
                got = await store.get_versioned(U, S)
                state = got.state or AgentState(S, U)
                state.context.append(Msg.user(f"{who}{v}"))
                assert await store.save_if_version(U, S, state, got.version) == v + 1
            if who == "A":
                mine = await a.get_versioned(U, S)
        assert mine.state is not None and mine.version == version
        if change == "append":
            mine.state.context.append(Msg.user("A-late"))
        else:
            mine.state.context.clear()
        with pytest.raises(VersionConflict, match="deleted and re-created since this store") as e:
            await a.save_if_version(U, S, mine.state, version)
        assert (e.value.expected, e.value.actual) == (version, version)
        got = await LocalJsonFileStore(tmp_path).get_versioned(U, S)
        assert got.state is not None and got.version == version
        assert [m.text for m in got.state.context] == [f"B{v}" for v in range(version)]
        again = await a.get_versioned(U, S)  # A reloads: B's incarnation
        assert again.state is not None
        again.state.context.append(Msg.user("A-late"))
        assert await a.save_if_version(U, S, again.state, version) == version + 1
        # the same instance deleting and recreating a slot is no conflict (as in memory)
        await a.delete(U, S)
        state = AgentState(S, U)
        state.context.append(Msg.user("A0"))
        assert await a.save_if_version(U, S, state, 0) == 1
        state.context.append(Msg.user("A1"))
        assert await a.save_if_version(U, S, state, 1) == 2

    anyio.run(main)


def test_a_state_another_instance_loaded_can_be_refused_once(tmp_path: Path) -> None:
    """The documented limit: the memory is per instance and per slot. ``writer`` saw the old
    incarnation; a state ``reader`` loaded from the new one is refused once by ``writer``
    (it cannot tell whose load it was), and the same save retried goes through."""
    from hookagent.errors import VersionConflict
    from hookagent.messages import Msg

    async def main() -> None:
        writer, reader, other = (LocalJsonFileStore(tmp_path) for _ in range(3))
        await writer.save_if_version(U, S, AgentState(S, U, summary="old"), 0)
        await writer.get_versioned(U, S)
        await other.delete(U, S)
        await other.save_if_version(U, S, AgentState(S, U, summary="new"), 0)
        got = await reader.get_versioned(U, S)
        assert got.state is not None
        got.state.context.append(Msg.user("hi"))
        with pytest.raises(VersionConflict, match="another instance loaded"):
            await writer.save_if_version(U, S, got.state, got.version)
        assert await writer.save_if_version(U, S, got.state, got.version) == 2

    anyio.run(main)


def test_seen_slots_zero_turns_the_recreated_slot_check_off(tmp_path: Path) -> None:
    """``seen_slots=0``: nothing is remembered, so the ABA save goes through (as before)."""
    from hookagent.messages import Msg

    async def main() -> None:
        a = LocalJsonFileStore(tmp_path, seen_slots=0)
        b = LocalJsonFileStore(tmp_path)
        await a.save_if_version(U, S, AgentState(S, U), 0)
        mine = await a.get_versioned(U, S)
        await b.delete(U, S)
        await b.save_if_version(U, S, AgentState(S, U), 0)
        assert mine.state is not None
        mine.state.context.append(Msg.user("late"))
        assert await a.save_if_version(U, S, mine.state, 1) == 2
        assert len(a._core.seen) == 0

    anyio.run(main)
