"""A first save's head inside its record file (format 3): crash points, the two-file fallback,
slots of the previous code (format 2, ``data/format2``) and what the previous code does with a
format-3 slot (it must fail closed)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from forkdeath import die_in_child, kill_at
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.layout import id_parts, slot_parts
from hookagent_store_jsonfile.localcore import LocalCore
from hookagent_store_jsonfile.records import MAGIC2, MAGIC3, decode_head_bytes

K = "agent_state"
DATA = Path(__file__).parent / "data" / "format2"
REPO = Path(__file__).resolve().parents[4]
OLD = "3e94745"  # the last commit whose first saves wrote a format-2 head and a record file


def _core(root: Path) -> LocalCore:
    return LocalCore(root, sweep_after=600.0, cache_slots=0, writers="multi")


def _state(session: str, *texts: str, user: str = "u") -> AgentState:
    state = AgentState(session, user)
    state.context.extend(Msg.user(t) for t in texts)
    return state


def _texts(core: LocalCore, user: str, session: str) -> list[str]:
    got = core.get(user, session, K).state
    assert got is not None
    return [m.text for m in got.context]


def _kdir(root: Path, user: str = "u", session: str = "s") -> Path:
    return root.joinpath(*slot_parts(user, session), *id_parts(K))


def test_a_first_save_is_one_file_linked_as_head(tmp_path: Path) -> None:
    core = _core(tmp_path)
    assert core.save("u", "s", _state("s", "a", "b"), 0, K, None) == 1
    kdir = _kdir(tmp_path)
    (log,) = kdir.glob("h*.log")
    assert (kdir / "head").samefile(log) and log.stat().st_nlink == 2
    assert sorted(p.name for p in kdir.iterdir()) == sorted(["head", log.name])
    head = decode_head_bytes(log.read_bytes(), "t")
    assert log.read_bytes().startswith(MAGIC3) and head.start > 0 and head.version == 1
    assert head.size == log.stat().st_size
    got = _core(tmp_path).get("u", "s", K).state
    assert got is not None
    got.context.append(Msg.user("c"))
    assert core.save("u", "s", got, 1, K, None) == 2  # an append, after the head's bytes
    assert (kdir / "head").samefile(log) and log.read_bytes()[: head.start] == head_bytes(log)
    assert _texts(_core(tmp_path), "u", "s") == ["a", "b", "c"]
    got.context.pop(0)
    assert core.save("u", "s", got, 2, K, None) == 3  # a rewrite: back to a head and a file
    (new,) = kdir.glob("h*.log")
    assert new != log and not (kdir / "head").samefile(new)
    assert (kdir / "head").read_bytes().startswith(MAGIC2)
    assert _texts(_core(tmp_path), "u", "s") == ["b", "c"]


def head_bytes(log: Path) -> bytes:
    data = log.read_bytes()
    return data[: decode_head_bytes(data, "t").start]


# a new session of a known user: the link, then fsyncs 1 record file, 2 temp key directory,
# 3 user directory (one wait: ``fsync_all``), (rename: the commit point), 4 session directory
POINTS = [("link", 1), ("fsync", 1), ("fsync", 2), ("fsync", 3), ("rename", 1), ("fsync", 4)]


@pytest.mark.parametrize(("name", "nth"), POINTS)
def test_a_first_save_killed_anywhere_leaves_the_old_state_or_the_new(
    tmp_path: Path, name: str, nth: int
) -> None:
    root = tmp_path / "root"
    _core(root).save("u", "s0", _state("s0", "x"), 0, K, None)  # the user exists

    def work() -> None:
        core = _core(root)
        core.save("u", "s1", _state("s1", "y"), 0, K, None)  # (the root: fsynced before)
        core.save("u", "s", _state("s", "a", "b"), 0, K, None)

    # after s1's save: five fsyncs (a fresh instance syncs the root too), one link, one rename
    die_in_child(kill_at(name, nth + (5 if name == "fsync" else 1)), work)
    core = _core(root)
    got = core.get("u", "s", K)
    committed = (name, nth) == ("fsync", 4)
    assert got.version == (1 if committed else 0)  # absent, never a lost head
    if committed:
        assert _texts(core, "u", "s") == ["a", "b"]
    assert core.save("u", "s", _state("s", "c"), got.version, K, None) == got.version + 1
    core.sweep(older_than=0)  # the dead save's temp directory
    sdir = root.joinpath(*slot_parts("u", "s"))
    assert not [p for p in sdir.iterdir() if p.name.startswith(".tmp.")]
    assert _texts(_core(root), "u", "s")[-1] == "c"


def test_where_links_are_refused_a_first_save_writes_two_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, "no hard links here")

    monkeypatch.setattr(os, "link", refused)
    core = _core(tmp_path)
    assert core.save("u", "s", _state("s", "a"), 0, K, None) == 1
    kdir = _kdir(tmp_path)
    (log,) = kdir.glob("h*.log")
    assert not (kdir / "head").samefile(log)
    assert (kdir / "head").read_bytes().startswith(MAGIC2)
    got = core.get("u", "s", K).state
    assert got is not None
    got.context.append(Msg.user("b"))
    assert core.save("u", "s", got, 1, K, None) == 2
    assert _texts(_core(tmp_path), "u", "s") == ["a", "b"]


def test_slots_the_previous_code_wrote_load_and_save(tmp_path: Path) -> None:
    """``data/format2``: written by ``OLD`` (``helpers/write_format2.py``)."""
    root = tmp_path / "root"
    shutil.copytree(DATA, root)
    core = _core(root)
    got = core.get("user-v2", "sess-v2", K)
    assert got.version == 3 and got.state is not None and got.state.summary == "v3"
    assert [m.text for m in got.state.context] == ["first", "reply " * 40, "q0", "a0", "q1", "a1"]
    got.state.context.append(Msg.user("new"))
    assert core.save("user-v2", "sess-v2", got.state, 3, K, None) == 4  # an append
    assert _texts(_core(root), "user-v2", "sess-v2")[-1] == "new"
    assert _texts(core, "user-v2", "sess-first") == ["alone"]
    only = core.get("user-v2", "sess-first", K).state
    assert only is not None
    only.context.clear()
    assert core.save("user-v2", "sess-first", only, 1, K, None) == 2  # a rewrite
    assert _texts(_core(root), "user-v2", "sess-first") == []


_OLD_CODE = r"""
import json, sys
from pathlib import Path
import hookagent_store_jsonfile
assert hookagent_store_jsonfile.__file__.startswith(sys.argv[2]), hookagent_store_jsonfile.__file__
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile.localcore import LocalCore
core = LocalCore(Path(sys.argv[1]), sweep_after=None, cache_slots=0, writers="multi")
out = {}
for what, call in (
    ("get", lambda: core.get("u", "s", "agent_state")),
    ("save", lambda: core.save("u", "s", AgentState("s", "u"), 1, "agent_state", None)),
    ("unconditional", lambda: core.save("u", "s", AgentState("s", "u"), None, "agent_state", None)),
):
    try:
        call()
        out[what] = "ok"
    except CorruptState as exc:
        out[what] = "CorruptState: " + str(exc)
print(json.dumps(out))
"""


def test_the_previous_code_fails_closed_on_a_format3_slot(tmp_path: Path) -> None:
    """Run ``OLD``'s store (from this repository's history) on a slot this code made: every
    load and save form is ``CorruptState`` (bad magic) and no byte changes."""
    old = tmp_path / "old"
    old.mkdir()
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", OLD, "src/plugins/store-jsonfile"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"commit {OLD} is not in this checkout's history")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    root = tmp_path / "root"
    _core(root).save("u", "s", _state("s", "a"), 0, K, None)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    env = dict(os.environ, PYTHONPATH=str(old / "src/plugins/store-jsonfile"))
    run = subprocess.run(
        [sys.executable, "-c", _OLD_CODE, str(root), str(old)],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    import json

    out = json.loads(run.stdout)
    for what in ("get", "save", "unconditional"):
        assert out[what].startswith("CorruptState: "), out
        assert "not a head file" in out[what], out
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert _texts(_core(root), "u", "s") == ["a"]


def test_a_copy_that_splits_the_link_still_loads_and_saves(tmp_path: Path) -> None:
    """``cp -r`` / ``rsync`` without ``-H``: ``head`` and ``h<gen>.log`` become two files."""
    core = _core(tmp_path / "a")
    core.save("u", "s", _state("s", "a"), 0, K, None)
    got = core.get("u", "s", K).state
    assert got is not None
    got.context.append(Msg.user("b"))
    core.save("u", "s", got, 1, K, None)
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # (copies each name: no hard link kept)
    kdir = _kdir(tmp_path / "b")
    (log,) = kdir.glob("h*.log")
    assert not (kdir / "head").samefile(log)
    copy = _core(tmp_path / "b")
    got = copy.get("u", "s", K).state
    assert got is not None and [m.text for m in got.context] == ["a", "b"]
    got.context.append(Msg.user("c"))
    assert copy.save("u", "s", got, 2, K, None) == 3
    assert _texts(_core(tmp_path / "b"), "u", "s") == ["a", "b", "c"]


@pytest.mark.parametrize("state_len", [0, 5, 83, 84, 85, 900, 9000, 90000])
def test_a_format3_head_says_where_it_ends_at_every_digit_count(state_len: int) -> None:
    from hookagent_store_jsonfile.records import encode_first_file

    for base in (b"", b"y" * 7, b"y" * 9910):
        data = encode_first_file(1, "abc123", 4, base, b"x" * state_len)
        head = decode_head_bytes(data, "t")
        assert head.size == len(data) and data[head.start :] == base
        assert head.state == b"x" * state_len and (head.version, head.count) == (1, 4)


def test_a_format3_header_with_damaged_lengths_reads_no_more_than_the_header() -> None:
    """A damaged header must not make a reader take the whole (growing) record file into
    memory before decoding refuses it."""
    import struct

    from hookagent.errors import CorruptState
    from hookagent_store_jsonfile.records import encode_first_file, head_length

    data = bytearray(encode_first_file(1, "abc123", 4, b"y" * 100, b"x" * 10))
    struct.pack_into(">I", data, len(MAGIC3), 2**31)  # the metadata's length
    fixed = len(MAGIC3) + 12
    assert head_length(bytes(data), 10**9) == fixed
    with pytest.raises(CorruptState):
        decode_head_bytes(bytes(data), "t")
