"""G4 (disk full) and G5 (fsync EIO): a typed error, the old state byte-identical, no temp file.

G4 runs in a subprocess (RLIMIT_FSIZE is per process; no root needed) and, where mounting is
permitted (root), on a 64 KiB tmpfs. G5 makes ``os.fsync`` raise EIO at each fsync site of
each save path in turn.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import StorageDurabilityError
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import Fence
from hookagent_store_jsonfile import LocalJsonFileStore

pytestmark = pytest.mark.anyio
SCENARIO = Path(__file__).parent / "helpers" / "diskfull.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def run_scenario(mode: str, root: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(SCENARIO), mode, str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def check_disk_full(result: dict[str, Any]) -> None:
    assert set(result["cases"]) == {"append_big", "rewrite_big", "head_big"}
    for name, case in result["cases"].items():
        assert case["outcome"] == "StorageFull", (name, case)
        assert case["identical"], name
        assert case["tmp_left"] == [], name
        assert case["version"] == 2, name
    assert result["history_after"] == 14
    assert result["save_after"] == 3


async def test_disk_full_rlimit_fsize(tmp_path: Path) -> None:
    check_disk_full(run_scenario("rlimit", tmp_path / "root"))


async def test_disk_full_tiny_tmpfs(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a 64 KiB tmpfs needs root; the RLIMIT_FSIZE variant ran instead")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"mount refused here ({mounted.stderr.decode().strip()}); RLIMIT_FSIZE ran instead"
        )
    try:
        check_disk_full(run_scenario("plain", mnt / "root"))
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


# ---------------------------------------------------------------------------- G5


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def msgs(n: int, tag: str) -> list[Msg]:
    return [Msg.user(f"{tag}{i}") for i in range(n)]


async def setup_existing(store: LocalJsonFileStore) -> None:
    state = AgentState("s", "u")
    state.context.extend(msgs(5, "m"))
    await store.save_if_version("u", "s", state, 0)


async def do_append(store: LocalJsonFileStore) -> int:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.context.extend(msgs(4, "new"))
    return await store.save_if_version("u", "s", got.state, got.version)


async def do_rewrite(store: LocalJsonFileStore) -> int:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.clear_context()
    got.state.context.extend(msgs(2, "fresh"))
    return await store.save_if_version("u", "s", got.state, got.version)


async def do_fenced(store: LocalJsonFileStore) -> int:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.context.extend(msgs(1, "f"))
    return await store.save_if_version("u", "s", got.state, got.version, fence=Fence(7, "me"))


async def do_create(store: LocalJsonFileStore) -> int:
    state = AgentState("s2", "u2")
    state.context.extend(msgs(3, "c"))
    return await store.save_if_version("u2", "s2", state, 0)


SCENARIOS: dict[str, Callable[[LocalJsonFileStore], Any]] = {
    "append": do_append,
    "rewrite": do_rewrite,
    "fenced": do_fenced,
    "create": do_create,
}


class FsyncFault:
    def __init__(self, fail_at: int | None) -> None:
        self.fail_at, self.calls, self.real = fail_at, 0, os.fsync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.calls - 1 == self.fail_at:
            raise OSError(errno.EIO, "injected EIO")
        self.real(fd)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_fsync_eio_at_every_site(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = SCENARIOS[name]
    # dry run: how many fsync sites does this save have?
    probe_root = tmp_path / "probe"
    store = LocalJsonFileStore(probe_root)
    await setup_existing(store)
    counter = FsyncFault(None)
    monkeypatch.setattr(os, "fsync", counter)
    await scenario(store)
    monkeypatch.undo()
    sites = counter.calls
    # an append is one fsync (its commit frame); a rewrite fsyncs the new history file, the
    # head temp file and the directory; a new fence adds its temp file and directory
    assert sites == {"append": 1, "fenced": 3, "rewrite": 3, "create": 3}[name] or (
        name == "create" and sites > 3  # plus the new directories' parents
    ), sites
    for k in range(sites):
        root = tmp_path / f"site{k}"
        store = LocalJsonFileStore(root)
        await setup_existing(store)
        before = snapshot(root)
        fault = FsyncFault(k)
        monkeypatch.setattr(os, "fsync", fault)
        with pytest.raises(StorageDurabilityError):
            await scenario(store)
        calls_at_failure = fault.calls
        # the handle is poisoned: every later operation raises, and nothing is fsynced again
        with pytest.raises(StorageDurabilityError):
            await store.get_versioned("u", "s")
        with pytest.raises(StorageDurabilityError):
            await store.save_if_version("u", "s", AgentState("s", "u"), 1)
        with pytest.raises(StorageDurabilityError):
            await store.list_session_ids("u")
        assert fault.calls == calls_at_failure == k + 1, "an fsync was retried after a failure"
        monkeypatch.undo()
        assert not list(root.rglob(".tmp.*")), f"site {k}: temp file left"
        fresh = LocalJsonFileStore(root)
        got = await fresh.get_versioned("u", "s")  # always readable: old or new, never torn
        created = (await fresh.get_versioned("u2", "s2")).version
        committed = got.version == 2 or created == 1
        if committed:  # only the directory fsync after the rename comes after the commit point
            assert name in ("rewrite", "create"), f"site {k}: an append committed without fsync"
            assert k == sites - 1, f"site {k} of {sites}: committed before the last fsync"
        else:
            assert got.version == 1 and got.state is not None
            assert [m.text for m in got.state.context] == [f"m{i}" for i in range(5)]
            after = snapshot(root)
            if name == "fenced":  # the fence is committed first, by its own atomic replace
                after.pop(".fence", None)
                after = {p: b for p, b in after.items() if not p.endswith("/.fence")}
                before = {p: b for p, b in before.items() if not p.endswith("/.fence")}
            assert after == before, f"site {k}: files changed {set(after) ^ set(before)}"
        await fresh.aclose()
