"""The issue's "done when", as written: an agent built with no store option, the installed
plugin found by entry-point autoload, persists under the state home, and a second process with
the same (user_id, session_id) continues the conversation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import anyio
import pytest
from hookagent_store_jsonfile import LocalJsonFileStore
from hookagent_store_jsonfile.layout import id_parts, slot_parts

AGENT = "support bot/v2"
CHILD = r"""
import json, sys
from hookagent import AgentConfig, RuntimeContext

config = AgentConfig(name=sys.argv[1], model="demo")  # no state_store, no plugins: autoload
agent = config.build()
reply = agent.call_sync(sys.argv[2], RuntimeContext(user_id="alice", session_id="chat/1"))
store = config.kernel._store
print(json.dumps({"reply": reply.text, "store": type(store).__name__, "root": str(store.root)}))
"""


def _child(cwd: Path, env: dict[str, str], text: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, AGENT, text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _env(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", None)  # autoload on, whatever CI sets
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def test_the_plugin_is_installed_as_an_entry_point() -> None:
    found = {e.name: e.value for e in entry_points(group="hookagent")}
    assert found.get("store-jsonfile") == "hookagent_store_jsonfile.plugin"


@pytest.mark.parametrize("home", ["HOOKAGENT_STATE_HOME", "HOME"])
def test_a_second_process_continues_the_conversation(tmp_path: Path, home: str) -> None:
    if home == "HOOKAGENT_STATE_HOME":
        env = _env(HOOKAGENT_STATE_HOME=str(tmp_path / "state"), HOME=str(tmp_path / "home"))
        root = tmp_path / "state"
    else:
        env = _env(HOOKAGENT_STATE_HOME=None, HOME=str(tmp_path / "home"))
        root = tmp_path / "home" / ".hookagent" / "state"
    (tmp_path / "cwd").mkdir()
    first = _child(tmp_path / "cwd", env, "hello, I am alice")
    assert "holds 0 earlier message" in first["reply"], first
    root = root.joinpath(*id_parts(AGENT))
    assert first["store"] == "LocalJsonFileStore" and first["root"] == str(root)
    key_dir = root.joinpath(*slot_parts("alice", "chat/1"), *id_parts("agent_state"))
    assert (key_dir / "head").is_file()
    second = _child(tmp_path / "cwd", env, "who am I?")
    assert "holds 2 earlier message" in second["reply"], second  # the first process's turn
    assert list((tmp_path / "cwd").iterdir()) == []  # nothing written in the cwd

    async def stored() -> list[str]:
        got = await LocalJsonFileStore(root).get_versioned("alice", "chat/1")
        assert got.version == 2 and got.state is not None
        return [m.text for m in got.state.context]

    texts = anyio.run(stored)
    assert texts[0] == "hello, I am alice" and texts[2] == "who am I?" and len(texts) == 4
    if home == "HOOKAGENT_STATE_HOME":
        assert not (tmp_path / "home").exists()  # the default home was not used
