"""Local disk: no symbolic link below the base is ever followed, whatever it points at."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hookagent_workspace import FsWorkspace, NotAFile, WorkspacePathError, open_backend
from hookagent_workspace.local import TMP_PREFIX

pytestmark = pytest.mark.anyio


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET")
    base = tmp_path / "ws"
    (base / "users" / "alice" / "d").mkdir(parents=True)
    return base


def alice(base: Path) -> FsWorkspace:
    return FsWorkspace(open_backend(str(base)), ("users", "alice"))


async def test_a_link_to_outside_is_refused_for_every_operation(base: Path) -> None:
    root = base / "users" / "alice"
    os.symlink(base.parent / "outside", root / "out")
    os.symlink(base.parent / "outside" / "secret.txt", root / "s.txt")
    ws = alice(base)
    for op in (
        ws.read_text("out/secret.txt"),
        ws.write_text("out/new.txt", "x"),
        ws.append_text("out/secret.txt", "x"),
        ws.list("out"),
        ws.walk("out"),
        ws.remove("out/secret.txt"),
        ws.read_text("s.txt"),
        ws.append_text("s.txt", "x"),
    ):
        with pytest.raises(WorkspacePathError, match="symbolic link"):
            await op
    assert (base.parent / "outside" / "secret.txt").read_text() == "SECRET"
    assert not (base.parent / "outside" / "new.txt").exists()


async def test_a_link_inside_the_workspace_is_not_followed_either(base: Path) -> None:
    root = base / "users" / "alice"
    (root / "d" / "f.txt").write_text("inside")
    os.symlink("d", root / "alias")
    ws = alice(base)
    with pytest.raises(WorkspacePathError, match="symbolic link"):
        await ws.read_text("alias/f.txt")
    entries = {e.name: e.kind for e in await ws.entries()}
    assert entries == {"alias": "link", "d": "dir"}
    files, _ = await ws.walk()
    assert files == [("d/f.txt", 6)]  # the walk does not go through the link


async def test_a_link_as_a_scope_directory_is_refused(base: Path) -> None:
    (base / "users" / "bob").mkdir()
    (base / "users" / "bob" / "b.txt").write_text("BOB")
    os.symlink(base / "users" / "bob", base / "users" / "mallory")
    ws = FsWorkspace(open_backend(str(base)), ("users", "mallory"))
    with pytest.raises(WorkspacePathError, match="symbolic link"):
        await ws.read_text("b.txt")
    with pytest.raises(WorkspacePathError, match="symbolic link"):
        await ws.write_text("new.txt", "x")
    assert sorted(os.listdir(base / "users" / "bob")) == ["b.txt"]


async def test_writing_over_a_link_replaces_the_link_not_its_target(base: Path) -> None:
    root = base / "users" / "alice"
    os.symlink(base.parent / "outside" / "secret.txt", root / "s.txt")
    ws = alice(base)
    await ws.write_text("s.txt", "mine")
    assert not (root / "s.txt").is_symlink() and (root / "s.txt").read_text() == "mine"
    assert (base.parent / "outside" / "secret.txt").read_text() == "SECRET"
    os.symlink(base.parent / "outside" / "secret.txt", root / "t.txt")
    await ws.remove("t.txt")  # removes the link itself
    assert (base.parent / "outside" / "secret.txt").read_text() == "SECRET"


async def test_a_fifo_is_refused_without_blocking(base: Path) -> None:
    os.mkfifo(base / "users" / "alice" / "pipe")
    ws = alice(base)
    with pytest.raises(NotAFile, match="not a regular file"):
        await ws.read_text("pipe")
    with pytest.raises(NotAFile):
        await ws.append_text("pipe", "x")


async def test_writes_are_atomic_and_keep_the_mode(base: Path) -> None:
    root = base / "users" / "alice"
    ws = alice(base)
    await ws.write_text("run.sh", "#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)
    ino = os.stat(root / "run.sh").st_ino
    await ws.write_text("run.sh", "#!/bin/sh\necho hi\n")
    info = os.stat(root / "run.sh")
    assert info.st_mode & 0o777 == 0o755 and info.st_ino != ino  # a new file renamed in
    assert not [n for n in os.listdir(root) if n.startswith(TMP_PREFIX)]
    (root / f"{TMP_PREFIX}leftover").write_text("crash")
    assert await ws.list() == ["d/", "run.sh"]


async def test_a_recently_touched_file_gets_a_fresh_version_on_each_look(
    base: Path,
) -> None:
    root = base / "users" / "alice"
    ws = alice(base)
    await ws.write_text("m.md", "aaaa")
    old = time.time() - 60
    os.utime(root / "m.md", (old, old))
    time.sleep(0.01)
    # the ctime of the utime call is recent: racy, so fresh versions for now
    assert await ws.version("m.md") != await ws.version("m.md")


async def test_version_is_stable_when_the_file_is_old(base: Path, monkeypatch) -> None:
    root = base / "users" / "alice"
    ws = alice(base)
    await ws.write_text("m.md", "aaaa")
    import hookagent_workspace.workspace as module

    monkeypatch.setattr(module.time, "time", lambda: os.stat(root / "m.md").st_ctime + 10)
    v1 = await ws.version("m.md")
    assert await ws.version("m.md") == v1
    with open(root / "m.md", "r+") as f:  # an in-place edit of the same size
        f.write("bbbb")
    assert await ws.version("m.md") != v1
