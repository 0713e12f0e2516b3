"""``hookagent log ...`` and ``run --session-log`` through the real command, as processes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hookagent_cli.testing import HOOKAGENT


def hk(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOOKAGENT, *args], capture_output=True, text=True, env=env, timeout=90, check=False
    )


def test_run_in_event_log_mode_then_read_export_fork_and_migrate(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop("HOOKAGENT_STORE", None)
    env["HOOKAGENT_STATE_HOME"] = str(tmp_path / "state")
    env["HOOKAGENT_BLOCKED_PLUGINS"] = "model-openai,store-redis,example-tools,example-store"
    log = f"file://{tmp_path}/log"
    slot = ["--user", "ann", "--session", "s1"]
    first = hk(env, "run", "--session-log", log, *slot, "-q", "What's the weather in Oslo?")
    assert first.returncode == 0, first.stderr
    second = hk(env, "run", "--session-log", log, *slot, "-q", "and now?")
    assert second.returncode == 0, second.stderr

    env["HOOKAGENT_SESSION_LOG"] = log  # the log commands read the variable too
    shown = hk(env, "log", "show", *slot)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "run/started" in lines[0] and "run/finished" in lines[-1]
    assert any("tool/dispatch" in line and "get_weather" in line for line in lines)
    assert any("results get_weather:success" in line for line in lines)  # the default state
    assert sum("run/started" in line for line in lines) == 2
    events = [json.loads(x) for x in hk(env, "log", "show", *slot, "--json").stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    runs = {e["run_id"] for e in events}
    assert len(runs) == 2
    one = sorted(runs)[0]
    only = [
        json.loads(x)
        for x in hk(env, "log", "show", *slot, "--json", "--run-id", one).stdout.splitlines()
    ]
    assert only and {e["run_id"] for e in only} == {one}
    tools = [
        json.loads(x)
        for x in hk(env, "log", "show", *slot, "--json", "--type", "tool/").stdout.splitlines()
    ]
    assert {e["type"] for e in tools} <= {"tool/dispatch", "tool/result"} and tools
    tail = hk(env, "log", "tail", *slot, "-n", "2").stdout.splitlines()
    assert len(tail) == 2 and "run/finished" in tail[-1]

    out = tmp_path / "events.jsonl"
    exported = hk(env, "log", "export", *slot, "--to", str(out), "--json")
    assert json.loads(exported.stdout)["exported"] == len(events)
    again = hk(env, "log", "export", *slot, "--to", str(out), "--json")
    assert json.loads(again.stdout)["exported"] == 0
    assert len(out.read_text().splitlines()) == len(events)

    nothing = hk(env, "log", "reconcile", *slot, "--reason", "look")
    assert nothing.returncode == 0 and "nothing is uncertain" in nothing.stdout
    wrong = hk(env, "log", "reconcile", *slot, "t-1=success", "--reason", "look")
    assert wrong.returncode != 0 and "ReconcileMismatch" in wrong.stderr + wrong.stdout

    forked = hk(env, "log", "fork", *slot, "s2")
    assert forked.returncode == 0, forked.stderr
    state = json.loads(hk(env, "log", "export-state", "--user", "ann", "--session", "s2").stdout)
    source = json.loads(hk(env, "log", "export-state", *slot).stdout)
    assert state["session_id"] == "s2" and state["context"] == source["context"]
    assert len(source["context"]) >= 6  # two turns, one with a tool call

    legacy = f"file://{tmp_path}/legacy"
    plain = {k: v for k, v in env.items() if k != "HOOKAGENT_SESSION_LOG"}  # LEGACY mode
    made = hk(plain, "run", "--store", legacy, "--user", "ann", "--session", "old", "-q", "hi")
    assert made.returncode == 0, made.stderr
    imported = hk(env, "log", "import", "--user", "ann", "--session", "old", "--store", legacy)
    assert imported.returncode == 0, imported.stderr
    resumed = hk(
        env, "run", "--session-log", log, "--user", "ann", "--session", "old", "--json", "more"
    )
    assert resumed.returncode == 0, resumed.stderr
    missing = hk(env, "log", "show")
    env.pop("HOOKAGENT_SESSION_LOG")
    assert hk(env, "log", "show").returncode == 2
    assert missing.returncode == 0
