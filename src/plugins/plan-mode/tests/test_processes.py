"""A new process in the middle finds plan mode still active (a real subprocess, JSON files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import WRITES, write_file
from hookagent import Agent, AgentConfig, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import plugin as plan_mode_plugin
from hookagent_store_jsonfile import LocalJsonFileStore
from workspace_double import WorkspacePlugin

HERE = Path(__file__).resolve().parent


def _agent(model: ScriptedModel, state_dir: Path, workspace_dir: Path) -> Agent:
    return AgentConfig(
        model=model,
        tools=[write_file],
        tool_groups=["plan-mode"],
        plugins=[plan_mode_plugin, WorkspacePlugin(workspace_dir)],
        autoload_plugins=False,
        state_store=LocalJsonFileStore(state_dir),
    ).build()


def test_plan_mode_survives_into_another_process_and_back(tmp_path: Path) -> None:
    WRITES.clear()
    state_dir, workspace_dir = tmp_path / "state", tmp_path / "ws"
    workspace_dir.mkdir()
    ctx = RuntimeContext(user_id="ann", session_id="xproc")

    # process 1 (this one): enter plan mode, the write is blocked
    model = ScriptedModel([tool_call("plan_enter"), tool_call("write_file", path="a", text="1")])
    first = _agent(model, state_dir, workspace_dir)
    first.call_sync("change the port", ctx)
    first.close_sync()
    assert WRITES == []

    # process 2: a fresh interpreter finds plan mode active, is blocked, plans and exits
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    env["HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "second_process.py"),
            str(state_dir),
            str(workspace_dir),
            "xproc",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {
        "first": "ALL_TOOLS_DENIED",
        "denied": ["denied", "denied"],  # process 1's write, then process 2's
        "banner": True,
        "second": "plan presented",
    }

    # process 1 again: plan mode is over, the write runs; the plan file is in the workspace
    model = ScriptedModel([tool_call("write_file", path="app.toml", text="port=2"), "done"])
    again = _agent(model, state_dir, workspace_dir)
    reply = again.call_sync("go", ctx.derive(run_id=None))
    assert reply.text == "done" and WRITES == ["app.toml=port=2"]
    plan = WorkspacePlugin(workspace_dir).for_session("ann", "xproc").root / "PLAN.md"
    assert plan.read_text() == "1. edit app.toml\n2. restart"
    again.close_sync()
