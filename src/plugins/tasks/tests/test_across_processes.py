"""A scripted 20-step session keeps its todo list across two processes (real subprocesses)
on three stores: JSON files, Redis and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("tasks_process.py")


def run(url: str, first: int, last: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), url, str(first), str(last)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_twenty_steps_across_two_processes(store_url: str) -> None:
    steps = run(store_url, 1, 10) + run(store_url, 11, 20)
    assert [s["step"] for s in steps] == list(range(1, 21))
    assert [s["reply"] for s in steps] == [f"step {n} done" for n in range(1, 21)]
    ids: dict[str, tuple[str, Any]] = {}
    for n, step in enumerate(steps, start=1):
        assert step["revision"] == n  # one valid update per step, in either process
        assert step["messages"] == 4 * n  # user, tool call, result, reply: history kept too
        before = steps[n - 2] if n > 1 else None
        seen = step["seen"]
        if before is None:
            assert seen == {"lines": [], "full_results": 0, "task_state": 0, "receipts": 0}
        else:
            # the model sees the previous step's list, the new process's first step included
            marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
            expected = [
                f"- {marks[state]} {subject}" + (" (high priority)" if prio == "high" else "")
                for _, subject, state, _, prio in before["tasks"]
            ]
            assert seen["lines"] == expected, n
            assert seen["full_results"] == 1 and seen["task_state"] == 0
            assert seen["receipts"] == n - 2  # every older full result became a receipt
        for task_id, subject, _, created_at, _ in step["tasks"]:
            if subject in ids:  # the same content keeps its id and created_at, across processes
                assert ids[subject] == (task_id, created_at), (n, subject)
            ids.setdefault(subject, (task_id, created_at))
    final = steps[-1]["tasks"]
    assert [t[1] for t in final] == [f"item {i}" for i in range(1, 13) if i != 3]
    assert [t[2] for t in final].count("in_progress") == 1
