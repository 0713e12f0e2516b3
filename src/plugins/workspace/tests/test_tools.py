"""The file tools' results: bounded, and saying when and why they were cut."""

from __future__ import annotations

import pytest
from hookagent import RuntimeContext
from hookagent_workspace import (
    EditError,
    FsWorkspace,
    Limits,
    NoWorkspace,
    PatternError,
    ToolInputError,
    WorkspaceLimitExceeded,
)
from hookagent_workspace.tools import MAX_LINE_CHARS, FileTools

pytestmark = pytest.mark.anyio
CTX = RuntimeContext()


def tools_on(ws: FsWorkspace, **limits: object) -> tuple[FileTools, FsWorkspace]:
    bounded = FsWorkspace(ws.backend, ws.names, Limits(**limits))  # type: ignore[arg-type]
    return FileTools(lambda ctx: bounded), bounded


async def test_read_file_pages_long_files(ws: FsWorkspace) -> None:
    tools, bws = tools_on(ws)
    await bws.write_text("f.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    assert await tools.read_file(CTX, "f.txt", offset=1, limit=3) == (
        "1\tline 1\n2\tline 2\n3\tline 3\n"
        "[lines 1-3 of 10 shown; call read_file with offset=4 to read on]"
    )
    assert (await tools.read_file(CTX, "f.txt", offset=9)).endswith("[lines 9-10 of 10 shown]")
    with pytest.raises(ToolInputError, match="past the end"):
        await tools.read_file(CTX, "f.txt", offset=11)
    with pytest.raises(ToolInputError):
        await tools.read_file(CTX, "f.txt", limit=0)
    await bws.write_text("empty.txt", "")
    assert await tools.read_file(CTX, "empty.txt") == "(empty.txt is empty)"


async def test_read_file_output_is_capped(ws: FsWorkspace) -> None:
    tools, bws = tools_on(ws, max_output_chars=100)
    await bws.write_text("f.txt", "x" * 30 + "\n" + "y" * (MAX_LINE_CHARS + 50) + "\n" + "z\n")
    out = await tools.read_file(CTX, "f.txt")
    assert out.startswith(
        "1\t" + "x" * 30 + "\n[lines 1-1 of 3 shown; call read_file with offset=2"
    )
    tools2, _ = tools_on(ws)
    long_line = (await tools2.read_file(CTX, "f.txt", offset=2, limit=1)).split("\n")[0]
    assert long_line.endswith("[... 50 more characters]")


async def test_list_files_is_bounded(ws: FsWorkspace) -> None:
    tools, bws = tools_on(ws, max_results=3)
    for i in range(5):
        await bws.write_text(f"d/f{i}.txt", "abc")
    await bws.write_text("d/sub/x", "1")
    out = await tools.list_files(CTX, "d")
    assert out == (
        "d/f0.txt  (3 bytes)\nd/f1.txt  (3 bytes)\nd/f2.txt  (3 bytes)\n[3 more entries not shown]"
    )
    assert await tools.list_files(CTX) == "d/"


async def test_glob_and_grep_outputs(ws: FsWorkspace) -> None:
    tools, bws = tools_on(ws, max_results=2)
    for name in ("a.py", "src/b.py", "src/c.py", "src/notes.md"):
        await bws.write_text(name, "import os\nTODO: x\n")
    assert await tools.glob(CTX, "**/*.py") == "a.py\nsrc/b.py\n[1 more matches not shown]"
    assert await tools.glob(CTX, "*.py", path="src") == "src/b.py\nsrc/c.py"
    assert await tools.glob(CTX, "*.rs") == "no files match '*.rs'"
    out = await tools.grep(CTX, "todo", ignore_case=True, include="*.md", path="src")
    assert out == "src/notes.md:2: TODO: x\n[1 matches in 1 files (1 files searched)]"
    capped = await tools.grep(CTX, "import")
    assert capped.startswith("a.py:1: import os\nsrc/b.py:1: import os\n[2 matches in 2 files")
    assert "stopped early at 2 matches" in capped
    assert (await tools.grep(CTX, "nothing-here")).startswith("no matches for 'nothing-here'")
    with pytest.raises(PatternError):
        await tools.grep(CTX, "(a+)+")


async def test_write_and_edit(ws: FsWorkspace) -> None:
    tools, bws = tools_on(ws, max_file_bytes=64)
    assert await tools.write_file(CTX, "n.md", "a b a") == "created n.md (5 bytes)"
    assert await tools.write_file(CTX, "n.md", "a b a") == "replaced n.md (5 bytes)"
    with pytest.raises(EditError, match="appears 2 times"):
        await tools.edit_file(CTX, "n.md", "a", "c")
    assert await bws.read_text("n.md") == "a b a"  # the refused edit changed nothing
    assert await tools.edit_file(CTX, "n.md", "a", "c", replace_all=True) == (
        "replaced 2 occurrences in n.md"
    )
    assert await bws.read_text("n.md") == "c b c"
    with pytest.raises(EditError, match="same"):
        await tools.edit_file(CTX, "n.md", "b", "b")
    with pytest.raises(EditError, match="empty"):
        await tools.edit_file(CTX, "n.md", "", "x")
    with pytest.raises(WorkspaceLimitExceeded):
        await tools.edit_file(CTX, "n.md", "b", "b" * 100)
    assert await bws.read_text("n.md") == "c b c"
    with pytest.raises(WorkspaceLimitExceeded):
        await tools.write_file(CTX, "big.md", "x" * 65)
    assert not await bws.exists("big.md")


async def test_without_a_workspace_the_tools_say_so() -> None:
    tools = FileTools(lambda ctx: None)
    with pytest.raises(NoWorkspace, match="no workspace"):
        await tools.read_file(CTX, "a")
