"""Slots written by the previous code (format 1: a head replaced per save, per-message records).

``data/format1`` was written by the store as of commit 543da24 (``helpers/write_format1.py``
run with that commit's package first on the path): one slot with a rewrite and two appends
(plain and zlib records), one with a killed writer's uncommitted record tail. The current code
reads both, and its first save to such a slot appends once more in the old way and writes a
format-2 head; later saves append commit frames.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hookagent.messages import Msg
from hookagent_store_jsonfile import LocalJsonFileStore
from hookagent_store_jsonfile.records import decode_head_file

pytestmark = pytest.mark.anyio
DATA = Path(__file__).parent / "data" / "format1"
U = "user-v1"
V1_TEXTS = ["short", "long " * 60, "", "", "second", "answer " * 40, "third"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "root")
    return tmp_path / "root"


def head_of(root: Path, session: str) -> Path:
    return root / U / session / "agent_state" / "head"


def log_of(root: Path, session: str) -> Path:
    return next((root / U / session / "agent_state").glob("h*.log"))


async def test_reads_what_the_previous_code_wrote(root: Path) -> None:
    store = LocalJsonFileStore(root)
    got = await store.get_versioned(U, "sess-v1")
    assert got.version == 3 and got.state is not None and got.state.summary == "v3"
    assert [m.text for m in got.state.context] == V1_TEXTS
    assert got.state.context[2].tool_uses[0].input == {"key": 1}
    torn = await store.get_versioned(U, "sess-torn")
    assert torn.version == 1 and torn.state is not None
    assert [m.text for m in torn.state.context] == ["a", "b " * 80]
    assert not decode_head_file(head_of(root, "sess-v1").read_bytes(), "t").tail


async def test_appends_convert_a_format1_slot(root: Path) -> None:
    reader = LocalJsonFileStore(root)
    await reader.get_versioned(U, "sess-v1")  # caches the format-1 history
    writer = LocalJsonFileStore(root)
    prefix = log_of(root, "sess-v1").read_bytes()
    for n in range(3):
        got = await writer.get_versioned(U, "sess-v1")
        assert got.state is not None
        got.state.context.append(Msg.user(f"new{n}"))
        got.state.summary = f"v{got.version + 1}"
        assert await writer.save_if_version(U, "sess-v1", got.state, got.version) == 4 + n
        if n == 0:
            first = head_of(root, "sess-v1").read_bytes()
            assert decode_head_file(first, "t").tail  # the first save wrote a format-2 head
    assert head_of(root, "sess-v1").read_bytes() == first  # then appends left it alone
    assert log_of(root, "sess-v1").read_bytes().startswith(prefix)
    for store in (reader, LocalJsonFileStore(root)):
        got = await store.get_versioned(U, "sess-v1")
        assert got.version == 6 and got.state is not None and got.state.summary == "v6"
        assert [m.text for m in got.state.context] == [*V1_TEXTS, "new0", "new1", "new2"]


async def test_a_format1_torn_tail_is_dropped_by_the_next_save(root: Path) -> None:
    store = LocalJsonFileStore(root)
    size = log_of(root, "sess-torn").stat().st_size
    got = await store.get_versioned(U, "sess-torn")
    assert got.state is not None
    committed = decode_head_file(head_of(root, "sess-torn").read_bytes(), "t").size
    assert committed < size
    got.state.context.append(Msg.user("c"))
    assert await store.save_if_version(U, "sess-torn", got.state, 1) == 2
    got = await LocalJsonFileStore(root).get_versioned(U, "sess-torn")
    assert got.state is not None and [m.text for m in got.state.context] == ["a", "b " * 80, "c"]


async def test_a_rewrite_of_a_format1_slot(root: Path) -> None:
    store = LocalJsonFileStore(root)
    got = await store.get_versioned(U, "sess-v1")
    assert got.state is not None
    old_log = log_of(root, "sess-v1")
    got.state.context.pop(0)
    assert await store.save_if_version(U, "sess-v1", got.state, 3) == 4
    assert not old_log.exists()
    got = await LocalJsonFileStore(root).get_versioned(U, "sess-v1")
    assert got.state is not None and [m.text for m in got.state.context] == V1_TEXTS[1:]
