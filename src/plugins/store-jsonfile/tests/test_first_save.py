"""Local disk: a first save or a delete killed half-way never leaves a history without its
head (which would now read as a lost head), and errors met in a slot name it."""

from __future__ import annotations

from pathlib import Path

import pytest
from forkdeath import die_in_child, kill_at
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.ids import slot_name
from hookagent_store_jsonfile.layout import id_parts, slot_parts
from hookagent_store_jsonfile.localcore import LocalCore


def _core(root: Path) -> LocalCore:
    return LocalCore(root, sweep_after=600.0, cache_slots=0, writers="multi")


def _state(*texts: str) -> AgentState:
    state = AgentState("s", "u")
    state.context.extend(Msg.user(t) for t in texts)
    return state


def test_a_first_save_killed_before_its_commit_leaves_an_absent_slot(tmp_path: Path) -> None:
    root = tmp_path / "root"
    die_in_child(
        kill_at("rename"), lambda: _core(root).save("u", "s", _state("a"), 0, "agent_state", None)
    )
    sdir = root.joinpath(*slot_parts("u", "s"))
    left = [p.name for p in sdir.iterdir()]
    assert any(n.startswith(".tmp.") for n in left)  # the whole new key, under a temp name
    assert not (sdir / id_parts("agent_state")[0]).exists()
    core = _core(root)
    assert core.get("u", "s", "agent_state").version == 0  # absent, not a lost head
    assert core.save("u", "s", _state("b"), 0, "agent_state", None) == 1
    assert core.sweep(older_than=0) == 1  # the dead save's directory
    got = core.get("u", "s", "agent_state")
    assert got.state is not None and [m.text for m in got.state.context] == ["b"]


def test_a_delete_killed_after_its_commit_leaves_an_absent_slot(tmp_path: Path) -> None:
    root = tmp_path / "root"
    core = _core(root)
    core.save("u", "s", _state("a"), 0, "agent_state", None)
    core.save("u", "s", _state("a", "b"), 1, "agent_state", None)
    die_in_child(kill_at("rmdir"), lambda: _core(root).delete("u", "s", "agent_state"))
    fresh = _core(root)
    assert fresh.get("u", "s", "agent_state").version == 0
    assert fresh.save("u", "s", _state("c"), 0, "agent_state", None) == 1
    assert fresh.sweep(older_than=0) == 1


@pytest.mark.parametrize("name", ["head", ".end"])
def test_a_non_regular_file_in_a_slot_names_the_slot(tmp_path: Path, name: str) -> None:
    root = tmp_path / "root"
    core = _core(root)
    core.save("u", "s", _state("a"), 0, "agent_state", None)
    kdir = root.joinpath(*slot_parts("u", "s"), *id_parts("agent_state"))
    if (kdir / name).exists():
        (kdir / name).unlink()
    (kdir / name).mkdir()
    with pytest.raises(CorruptState, match=slot_name("u", "s") + f": '{name}'"):
        _core(root).get("u", "s", "agent_state")
