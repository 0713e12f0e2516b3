"""The workspace's operations on local disk and memory://: results, limits and typed errors."""

from __future__ import annotations

import pytest
from hookagent_workspace import (
    FsWorkspace,
    NotADirectory,
    NotAFile,
    NotText,
    WorkspaceFileNotFound,
    WorkspaceLimitExceeded,
    WorkspacePathError,
)

pytestmark = pytest.mark.anyio


async def test_write_read_append_size_remove(ws: FsWorkspace) -> None:
    assert not await ws.exists("notes/a.md")
    await ws.write_text("notes/a.md", "caf\u00e9\n")
    assert await ws.exists("notes/a.md") and await ws.exists("notes")
    assert await ws.is_dir("notes") and not await ws.is_dir("notes/a.md")
    assert await ws.read_text("notes/a.md") == "caf\u00e9\n"
    assert await ws.size("notes/a.md") == 6
    await ws.append_text("notes/a.md", "more\n")
    await ws.append_text("notes/new.md", "first\n")  # append creates
    assert await ws.read_text("notes/a.md") == "caf\u00e9\nmore\n"
    assert await ws.read_text("./notes//new.md") == "first\n"
    await ws.write_text("notes/a.md", "replaced")
    assert await ws.read_text("notes/a.md") == "replaced"
    await ws.remove("notes/a.md")
    assert not await ws.exists("notes/a.md")
    with pytest.raises(WorkspaceFileNotFound, match=r"'notes/a\.md'"):
        await ws.read_text("notes/a.md")


async def test_list_and_entries(ws: FsWorkspace) -> None:
    assert await ws.list() == []  # nothing written yet: an empty workspace, not an error
    await ws.write_text("b.txt", "bb")
    await ws.write_text("a/x.txt", "x")
    await ws.write_text("a/y/z.txt", "z")
    assert await ws.list() == ["a/", "b.txt"]
    assert await ws.list("a") == ["a/x.txt", "a/y/"]
    entries = await ws.entries("")
    assert [(e.name, e.kind) for e in entries] == [("a", "dir"), ("b.txt", "file")]
    assert entries[1].size == 2
    files, more = await ws.walk()
    assert files == [("a/x.txt", 1), ("a/y/z.txt", 1), ("b.txt", 2)] and not more
    assert (await ws.walk("a/y"))[0] == [("a/y/z.txt", 1)]
    with pytest.raises(WorkspaceFileNotFound):
        await ws.list("nope")
    with pytest.raises(NotADirectory):
        await ws.list("b.txt")


async def test_walk_is_bounded(ws: FsWorkspace) -> None:
    small = FsWorkspace(ws.backend, ws.names, type(ws.limits)(max_scan_files=3))
    for i in range(5):
        await small.write_text(f"f{i}.txt", "x")
    files, more = await small.walk()
    assert [p for p, _ in files] == ["f0.txt", "f1.txt", "f2.txt"] and more


async def test_size_limits_refuse_before_writing(ws: FsWorkspace) -> None:
    limit = ws.limits.max_file_bytes
    with pytest.raises(WorkspaceLimitExceeded, match=f"{limit + 1} bytes is over .* {limit}"):
        await ws.write_text("big.txt", "x" * (limit + 1))
    assert not await ws.exists("big.txt")
    await ws.write_text("big.txt", "x" * (limit - 2))
    with pytest.raises(WorkspaceLimitExceeded):
        await ws.append_text("big.txt", "xyz")
    assert await ws.size("big.txt") == limit - 2  # the refused append changed nothing
    roomy = FsWorkspace(ws.backend, ws.names, type(ws.limits)(max_file_bytes=limit * 2))
    await roomy.write_text("big.txt", "y" * (limit + 10))
    with pytest.raises(WorkspaceLimitExceeded, match=r"read 'big\.txt'"):
        await ws.read_text("big.txt")  # the small workspace refuses to read it


async def test_kinds_and_text_errors(ws: FsWorkspace) -> None:
    await ws.write_text("d/f.txt", "x")
    with pytest.raises(NotAFile, match="directory"):
        await ws.read_text("d")
    with pytest.raises(NotAFile):
        await ws.write_text("d", "x")
    with pytest.raises(NotAFile):
        await ws.remove("d")
    with pytest.raises(NotADirectory):
        await ws.write_text("d/f.txt/under", "x")
    with pytest.raises(NotADirectory):
        await ws.read_text("d/f.txt/under")
    await ws.write_bytes("bin", b"\xff\xfe\x00")
    with pytest.raises(NotText, match="not UTF-8"):
        await ws.read_text("bin")
    with pytest.raises(NotText, match="not valid Unicode"):
        await ws.write_text("s.txt", "\ud800")
    with pytest.raises(WorkspaceFileNotFound):
        await ws.remove("missing")
    with pytest.raises(WorkspaceFileNotFound):
        await ws.size("missing")


@pytest.mark.parametrize(
    "path", ["../x", "a/../../x", "/etc/passwd", "..", "nul\x00", "a\\..\\b", "memory://x", ""]
)
async def test_escapes_are_refused_by_every_operation(ws: FsWorkspace, path: str) -> None:
    for op in (
        ws.read_text(path),
        ws.write_text(path, "x"),
        ws.append_text(path, "x"),
        ws.remove(path),
        ws.size(path),
        ws.version(path),
    ):
        with pytest.raises(WorkspacePathError):
            await op
    if path != "":
        for op in (ws.list(path), ws.exists(path), ws.walk(path)):
            with pytest.raises(WorkspacePathError):
                await op


async def test_version_changes_with_every_edit(ws: FsWorkspace) -> None:
    assert await ws.version("m.md") is None
    await ws.write_text("m.md", "one")
    v1 = await ws.version("m.md")
    await ws.write_text("m.md", "two")  # same size, within the same clock tick
    assert await ws.version("m.md") != v1
    await ws.write_text("d/x", "x")
    assert await ws.version("d") is None  # a directory has no version
    await ws.remove("m.md")
    assert await ws.version("m.md") is None


def test_url_and_shared_name_the_scope(ws: FsWorkspace) -> None:
    scoped = FsWorkspace(ws.backend, ("users", "alice"))
    assert scoped.url == ws.url.rstrip("/") + "/users/alice"
    assert scoped.shared is False
