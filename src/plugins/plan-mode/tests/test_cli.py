"""``hookagent plan show|enter|exit``: the real command, in a subprocess, on JSON files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hookagent import AgentConfig, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import plugin as plan_mode_plugin
from hookagent_store_jsonfile import LocalJsonFileStore

BLOCKED = "model-openai,store-sql,store-redis,example-tools,example-store"


def _hk(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", None)
    env["HOOKAGENT_BLOCKED_PLUGINS"] = BLOCKED
    return subprocess.run(
        [sys.executable, "-m", "hookagent_cli.main", "plan", *args, "--store", store.as_uri()],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_enter_show_exit(tmp_path: Path) -> None:
    store = tmp_path / "state"
    who = ("--user", "ann", "--session", "cli")
    out = _hk(store, "enter", *who)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("session 'cli' of user 'ann' is in plan mode\n")

    again = _hk(store, "enter", *who)
    assert "(it already was)" in again.stdout

    # a call in this process, on the same files, is in plan mode and writes a plan
    model = ScriptedModel([tool_call("plan_write", content="1. a\n2. b"), "ok"])
    AgentConfig(
        model=model,
        tool_groups=["plan-mode"],
        plugins=[plan_mode_plugin],
        autoload_plugins=False,
        state_store=LocalJsonFileStore(store, writers="multi"),
    ).build().call_sync("plan", RuntimeContext(user_id="ann", session_id="cli"))

    shown = _hk(store, "show", *who, "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["plan_active"] is True and report["plan"] == "1. a\n2. b"

    done = _hk(store, "exit", *who)
    assert done.returncode == 0, done.stderr
    assert "left plan mode" in done.stdout and "1. a\n2. b" in done.stdout
    off = _hk(store, "show", *who)
    assert "plan mode off" in off.stdout

    not_in = _hk(store, "exit", *who)
    assert "was not in plan mode" in not_in.stdout


def test_bad_ids_are_one_line_errors(tmp_path: Path) -> None:
    out = _hk(tmp_path / "s", "show", "--session", "")
    assert out.returncode == 1
    assert out.stderr.startswith("hookagent: error: InvalidIdentifier")
