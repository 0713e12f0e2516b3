"""ASK end to end across real processes on one JSON-file store.

A run suspends and its process exits; another process answers. Approve runs the tool
exactly once; Reject gives the model a denied result; "always" (``Approve(remember=True)``)
runs it and stores an allow rule, so the next call in yet another process runs unasked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hookagent_permissions.section import SECTION, from_json
from hookagent_store_jsonfile import LocalJsonFileStore

WORKER = Path(__file__).with_name("ask_worker.py")


def step(tmp: Path, name: str, answer: str = "") -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(WORKER), str(tmp / "state"), str(tmp / "ran.txt"), name, answer],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def ran(tmp: Path) -> list[str]:
    path = tmp / "ran.txt"
    return path.read_text().split() if path.exists() else []


def asked(tmp: Path) -> str:
    reply = step(tmp, "ask")
    assert reply["metadata"]["generate_reason"] == "SUSPENDED"
    [pending] = reply["metadata"]["pending"]
    assert pending["tool"] == "deploy" and pending["input"] == {"env": "prod"}
    assert pending["data"]["mode"] == "default" and pending["data"]["source"] == "mode"
    assert ran(tmp) == []
    return str(pending["tool_use_id"])


def test_approve_in_another_process_runs_the_tool_exactly_once(tmp_path: Path) -> None:
    uid = asked(tmp_path)
    reply = step(tmp_path, "approve", uid)
    assert reply["metadata"]["generate_reason"] == "COMPLETED"
    assert reply["text"] == "model saw success: deployed to prod"
    assert ran(tmp_path) == ["prod"]
    # answering again is refused and runs nothing
    again = subprocess.run(
        [
            sys.executable,
            str(WORKER),
            str(tmp_path / "state"),
            str(tmp_path / "ran.txt"),
            "approve",
            uid,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode != 0 and "UnknownInteraction" in again.stderr
    assert ran(tmp_path) == ["prod"]


def test_reject_in_another_process_is_denied_and_the_model_sees_it(tmp_path: Path) -> None:
    uid = asked(tmp_path)
    reply = step(tmp_path, "reject", uid)
    assert reply["text"] == "model saw denied: not today"
    assert ran(tmp_path) == []


def test_always_stores_an_allow_rule_and_the_next_call_runs_unasked(tmp_path: Path) -> None:
    uid = asked(tmp_path)
    reply = step(tmp_path, "always", uid)
    assert reply["text"] == "model saw success: deployed to prod"
    store = LocalJsonFileStore(str(tmp_path / "state"))

    async def read() -> Any:
        return (await store.get_versioned("ann", "ops")).state

    import anyio

    state = anyio.run(read)
    [rule] = from_json(state.extensions[SECTION]).allow_rules["deploy"]
    assert (rule.rule_content, rule.behavior, rule.source) == (None, "allow", "session")
    again = step(tmp_path, "again")
    assert again["metadata"]["generate_reason"] == "COMPLETED"
    assert again["text"] == "model saw success: deployed to dev"
    assert ran(tmp_path) == ["prod", "dev"]
