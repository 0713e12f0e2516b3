"""``hookagent tasks ...``: the trusted contract at a terminal (the real command, in
subprocesses), including two people deciding at once on one expected revision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HOOKAGENT = [sys.executable, "-m", "hookagent_cli.main"]
SLOT = ["--user", "ann", "--session", "s1"]


def env(tmp_path: Path) -> dict[str, str]:
    out = dict(os.environ)
    out.pop("HOOKAGENT_STORE", None)
    out.pop("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", None)
    out["HOOKAGENT_STATE_HOME"] = str(tmp_path / "home")
    out["HOOKAGENT_BLOCKED_PLUGINS"] = "model-openai,example-tools,example-store"
    return out


def start(tmp_path: Path, store: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*HOOKAGENT, "tasks", *args, *SLOT, "--store", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(tmp_path),
    )


def hk(tmp_path: Path, store: str, *args: str) -> subprocess.CompletedProcess[str]:
    proc = start(tmp_path, store, *args)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def ok_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_commands_end_to_end(tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'state'}"
    shown = hk(tmp_path, store, "show")
    assert shown.returncode == 0 and shown.stdout.splitlines()[:2] == ["revision 0", "todos (0):"]
    doc = ok_json(
        hk(
            tmp_path,
            store,
            "begin",
            "T-1",
            "ship it",
            "--source-ref",
            "ticket 9",
            "--expected-revision",
            "0",
            "--json",
        )
    )
    assert doc["revision"] == 1 and doc["task_scope"] == {
        "task_id": "T-1",
        "objective": "ship it",
        "source_ref": "ticket 9",
    }
    # a requirement proposed by the model (here: written as the model's tool would leave it)
    from hookagent import AgentConfig, RuntimeContext
    from hookagent.testing import ScriptedModel, tool_call

    model = ScriptedModel(
        [
            tool_call(
                "task_requirement_propose",
                kind="ACCEPTANCE_CRITERION",
                text="tests pass",
                source_ref="chat",
            ),
            "ok",
        ]
    )
    config = AgentConfig(
        model=model, state_store=store, tool_groups=["tasks"], agent_id="hookagent"
    )
    config.build().call_sync("go", RuntimeContext(user_id="ann", session_id="s1"))
    config.close()
    stale = hk(
        tmp_path,
        store,
        "decide",
        "R1",
        "confirm",
        "--source-ref",
        "chat",
        "--expected-revision",
        "1",
    )
    assert (
        stale.returncode == 1
        and "TaskRevisionConflict: tasks_context is at revision 2, not the expected 1"
        in stale.stderr
    )
    doc = ok_json(
        hk(
            tmp_path,
            store,
            "decide",
            "R1",
            "confirm",
            "--source-ref",
            "chat",
            "--expected-revision",
            "2",
            "--json",
        )
    )
    assert (
        doc["requirements"][0]["status"] == "CONFIRMED"
        and doc["requirements"][0]["decision"]["authority"] == "USER"
    )
    refused = hk(tmp_path, store, "verify", "R1", "--outcome", "PASSED", "--expected-revision", "3")
    assert (
        refused.returncode == 1 and "BindingMismatch: no subject version is set" in refused.stderr
    )
    doc = ok_json(
        hk(tmp_path, store, "set-subject", "abc123", "--expected-revision", "3", "--json")
    )
    assert doc["current_binding"] == {
        "task_id": "T-1",
        "contract_version": 1,
        "subject_version": "abc123",
    }
    command = f"{sys.executable} -c \"print('all green')\""
    doc = ok_json(
        hk(
            tmp_path,
            store,
            "verify",
            "R1",
            "--command",
            command,
            "--expected-revision",
            "4",
            "--json",
        )
    )
    assert doc["recorded"]["outcome"] == "PASSED" and doc["recorded"]["reason"] == "all green"
    assert (
        doc["verifications"][0]["current"] is True
        and doc["verifications"][0]["verifier_id"] == "command"
    )
    doc = ok_json(hk(tmp_path, store, "invalidate", "--expected-revision", "5", "--json"))
    assert doc["verifications"][0]["current"] is False and doc["subject_version"] is None
    text = hk(tmp_path, store, "show").stdout
    assert (
        "revision 6" in text
        and "R1 ACCEPTANCE_CRITERION CONFIRMED by USER (chat): tests pass" in text
    )
    assert "R1 PASSED by command: all green  (not current: another binding)" in text
    usage = hk(tmp_path, store, "decide", "R1", "confirm", "--source-ref", "x")
    assert usage.returncode == 2 and "--expected-revision" in usage.stderr


def test_two_people_deciding_at_once_one_wins(tmp_path: Path, store_url: str) -> None:
    """Three processes decide R1 at once, each on revision 2: exactly one wins."""
    store = store_url
    ok_json(hk(tmp_path, store, "begin", "T-1", "ship", "--expected-revision", "0", "--json"))
    from hookagent import AgentConfig, RuntimeContext
    from hookagent.testing import ScriptedModel, tool_call

    model = ScriptedModel(
        [
            tool_call(
                "task_requirement_propose", kind="CONSTRAINT", text="no new deps", source_ref="chat"
            ),
            "ok",
        ]
    )
    config = AgentConfig(
        model=model, state_store=store, tool_groups=["tasks"], agent_id="hookagent"
    )
    config.build().call_sync("go", RuntimeContext(user_id="ann", session_id="s1"))
    config.close()
    procs = [
        start(
            tmp_path,
            store,
            "decide",
            "R1",
            verdict,
            "--source-ref",
            who,
            "--expected-revision",
            "2",
        )
        for verdict, who in (("confirm", "alice"), ("reject", "bob"), ("confirm", "carol"))
    ]
    results = [(*p.communicate(timeout=120), p.returncode) for p in procs]
    codes = sorted(code for _, _, code in results)
    assert codes == [0, 1, 1], results
    for _, err, code in results:
        if code:
            assert "TaskRevisionConflict: tasks_context is at revision 3, not the expected 2" in err
    doc = ok_json(hk(tmp_path, store, "show", "--json"))
    assert doc["revision"] == 3 and doc["requirements"][0]["status"] in ("CONFIRMED", "REJECTED")
