"""The section's JSON: the reference's field names, a strict reader that names the field,
the kernel's old minimal shape upcast, unknown keys kept."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hookagent_tasks import InvalidTasksSection, TasksContext, parse_section, section_json
from hookagent_tasks.sectionjson import legacy_task_id

TASK_ID = "0123456789abcdef0123456789abcdef"


def full() -> dict[str, Any]:
    return {
        "tasks": [
            {
                "id": TASK_ID,
                "subject": "write tests",
                "description": "all of them",
                "state": "in_progress",
                "created_at": 1.5,
                "owner": "agent",
                "blocks": [],
                "blocked_by": [],
                "metadata": {"priority": "high"},
                "color": "blue",
            }
        ],
        "revision": 4,
        "objective": "ship",
        "task_scope": {"task_id": "T-1", "objective": "ship", "source_ref": "ticket 9"},
        "contract_version": 2,
        "subject_version": "abc123",
        "requirements": [
            {
                "id": "R1",
                "kind": "ACCEPTANCE_CRITERION",
                "text": "tests pass",
                "status": "CONFIRMED",
                "source_ref": "user",
                "decision": {"authority": "USER", "source_ref": "chat", "decided_at": 2.0},
                "created_at": 1.0,
            }
        ],
        "verifications": [
            {
                "id": "v1",
                "requirement_id": "R1",
                "action_id": "a1",
                "verifier_id": "pytest",
                "outcome": "PASSED",
                "reason": "12 passed",
                "binding": {"task_id": "T-1", "contract_version": 2, "subject_version": "abc123"},
                "recorded_at": 3.0,
            }
        ],
        "future_field": [1, 2],
    }


def test_round_trip_keeps_every_field_and_unknown_keys() -> None:
    doc = full()
    tc = parse_section(doc)
    assert tc.tasks[0].subject == "write tests" and tc.tasks[0].priority == "high"
    assert tc.binding is not None and tc.is_current(tc.verifications[0])
    assert section_json(tc) == doc
    assert parse_section(orjson.loads(orjson.dumps(section_json(tc)))) == tc


def test_absent_section_is_empty() -> None:
    assert parse_section(None) == TasksContext()


def test_the_old_minimal_shape_is_upcast() -> None:
    old = {
        "todos": [
            {"content": "a", "status": "completed", "id": TASK_ID},
            {"content": "b", "status": "in_progress", "id": "todo-2"},
            {"content": "c", "status": "pending", "id": None},
        ],
        "revision": 7,
        "objective": "finish",
    }
    tc = parse_section(old)
    assert tc.revision == 7 and tc.objective == "finish"
    assert [(t.subject, t.state) for t in tc.tasks] == [
        ("a", "completed"),
        ("b", "in_progress"),
        ("c", "pending"),
    ]
    assert tc.tasks[0].id == TASK_ID
    assert tc.tasks[1].id == legacy_task_id(1, "b") and tc.tasks[1].metadata == {
        "legacy_id": "todo-2"
    }
    assert parse_section(old) == tc  # pure: the same ids every time
    assert "todos" not in section_json(tc)
    assert parse_section({"todos": [], "revision": 0}) == TasksContext()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("revision",), "4", r"tasks_context\.revision: expected int, got str"),
        (("revision",), True, r"tasks_context\.revision: expected int, got bool"),
        (("revision",), -1, r"tasks_context\.revision: must be >= 0"),
        (("tasks", 0, "id"), "nothex", r"tasks_context\.tasks\[0\]\.id: 'nothex' is not 32"),
        (("tasks", 0, "state"), "done", r"tasks_context\.tasks\[0\]\.state: 'done' is not one of"),
        (("tasks", 0, "blocks"), [1], r"tasks_context\.tasks\[0\]\.blocks\[0\]: expected str"),
        (("requirements", 0, "kind"), "WISH", r"requirements\[0\]\.kind: 'WISH'"),
        (
            ("requirements", 0, "decision"),
            None,
            r"requirements\[0\]\.decision: a CONFIRMED requirement must have",
        ),
        (
            ("verifications", 0, "binding", "contract_version"),
            "2",
            r"verifications\[0\]\.binding\.contract_version",
        ),
        (("verifications", 0, "outcome"), "OK", r"verifications\[0\]\.outcome: 'OK'"),
        (("task_scope", "task_id"), 5, r"tasks_context\.task_scope\.task_id: expected str"),
    ],
)
def test_a_bad_field_is_named(path: tuple[Any, ...], value: Any, message: str) -> None:
    doc = full()
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InvalidTasksSection, match=message):
        parse_section(doc)


def test_a_candidate_with_a_decision_is_refused() -> None:
    doc = full()
    doc["requirements"][0]["status"] = "CANDIDATE"
    with pytest.raises(
        InvalidTasksSection, match="a CANDIDATE requirement must not have a decision"
    ):
        parse_section(doc)


def test_not_an_object() -> None:
    with pytest.raises(InvalidTasksSection, match="tasks_context: expected dict, got list"):
        parse_section([])
