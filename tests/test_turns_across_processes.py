"""A turn suspends, the process exits, a new process answers: the tool runs exactly once and
the turn completes under the same turn_id with a new run_id (JSON-file store, real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("turn_process.py")


def run(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "state"), str(tmp_path / "log"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def runs(tmp_path: Path) -> list[str]:
    log = tmp_path / "log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize(
    ("start", "answer", "text", "executions"),
    [
        ("start", "approve", "success: deployed to prod", ["deploy prod"]),
        ("start", "reject", "denied: no", []),
        ("start-ci", "external", "success: CI green", []),
    ],
)
def test_answer_in_a_new_process(
    tmp_path: Path, start: str, answer: str, text: str, executions: list[str]
) -> None:
    first = run(tmp_path, start)
    assert first["meta"]["generate_reason"] == "SUSPENDED" and runs(tmp_path) == []
    [pending] = first["meta"]["pending"]
    second = run(tmp_path, answer, pending["tool_use_id"], first["turn_id"])
    assert second["meta"]["generate_reason"] == "COMPLETED" and second["text"] == text
    assert second["turn_id"] == first["turn_id"] and second["run_id"] != first["run_id"]
    assert runs(tmp_path) == executions  # exactly once, or never
    # a second answer to the same interaction, in a third process, is refused
    third = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(tmp_path / "state"),
            str(tmp_path / "log"),
            answer,
            pending["tool_use_id"],
            first["turn_id"],
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert third.returncode != 0 and "UnknownInteraction" in third.stderr
    assert runs(tmp_path) == executions
