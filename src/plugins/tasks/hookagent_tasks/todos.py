"""``todo_write``'s rules as pure functions: validate a whole list, replace, render.

The model sends the complete list every time (no patches to get wrong); a list that breaks a
rule is refused whole, so the stored list is always one the model wrote in full.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs
from hookagent.messages import new_id

from .errors import TaskLimitExceeded, TodoValidationError
from .model import (
    MAX_TODO_CONTENT,
    MAX_TODOS,
    PRIORITIES,
    TASK_STATES,
    Priority,
    Task,
    TasksContext,
    TaskState,
    reference_now,
)

DEFAULT_PRIORITY = "medium"
_ITEM_KEYS = frozenset(("content", "status", "priority"))
MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}

RESULT_HEADER = re.compile(r"Todo list updated \(revision (\d+)\)")
"""How a full ``todo_write`` result begins (the projection recognises it by this)."""


@attrs.frozen
class TodoItem:
    """One validated entry of a ``todo_write`` call."""

    content: str
    status: TaskState
    priority: Priority


def normalise(content: str) -> str:
    """One line, single spaces: what is stored and what ids are matched by."""
    return " ".join(content.split())


def validate_todos(todos: Any) -> list[TodoItem]:
    """The items, or ``TodoValidationError`` naming the first bad entry (nothing is kept)."""
    if not isinstance(todos, list):
        raise TodoValidationError(f"todos must be a list, got {type(todos).__name__}")
    if len(todos) > MAX_TODOS:
        raise TaskLimitExceeded(f"todos: {len(todos)} items, at most {MAX_TODOS} are allowed")
    items: list[TodoItem] = []
    for i, item in enumerate(todos):
        where = f"todos[{i}]"
        if not isinstance(item, dict):
            raise TodoValidationError(f"{where}: expected an object, got {type(item).__name__}")
        unknown = sorted(set(item) - _ITEM_KEYS)
        if unknown:
            raise TodoValidationError(
                f"{where}: unknown field(s) {unknown}; accepted: content, status, priority"
            )
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise TodoValidationError(f"{where}.content: a todo needs non-blank text")
        content = normalise(content)
        if len(content) > MAX_TODO_CONTENT:
            raise TaskLimitExceeded(
                f"{where}.content: {len(content)} characters, at most {MAX_TODO_CONTENT}"
            )
        status = item.get("status")
        if status not in TASK_STATES:
            raise TodoValidationError(
                f"{where}.status: {status!r} is not one of {', '.join(TASK_STATES)}"
            )
        priority = item.get("priority", DEFAULT_PRIORITY)
        if priority is None:
            priority = DEFAULT_PRIORITY
        if priority not in PRIORITIES:
            raise TodoValidationError(
                f"{where}.priority: {priority!r} is not one of {', '.join(PRIORITIES)}"
            )
        items.append(TodoItem(content, cast(TaskState, status), cast(Priority, priority)))
    in_progress = [i for i, t in enumerate(items) if t.status == "in_progress"]
    if len(in_progress) > 1:
        raise TodoValidationError(
            f"at most one todo may be in_progress; todos {in_progress} are (finish one first)"
        )
    return items


def replace_todos(
    tc: TasksContext,
    todos: Any,
    *,
    now: Callable[[], str | float] = reference_now,
    make_id: Callable[[], str] = new_id,
) -> TasksContext:
    """The section with the whole list replaced and the revision bumped (clearing counts).

    A task keeps its id, ``created_at`` and other fields when an entry has the same content
    (each old task matches at most one entry, in order); links to tasks that are gone are
    dropped. Raises before building anything when the list breaks a rule.
    """
    items = validate_todos(todos)
    unmatched: dict[str, list[Task]] = {}
    for task in tc.tasks:
        unmatched.setdefault(normalise(task.subject), []).append(task)
    stamp = now()
    tasks: list[Task] = []
    for item in items:
        olds = unmatched.get(item.content)
        old = olds.pop(0) if olds else None
        metadata = {**(old.metadata if old else {}), "priority": item.priority}
        if old is None:
            tasks.append(
                Task(
                    id=make_id(),
                    subject=item.content,
                    state=item.status,
                    created_at=stamp,
                    metadata=metadata,
                )
            )
        else:
            tasks.append(
                attrs.evolve(old, subject=item.content, state=item.status, metadata=metadata)
            )
    ids = {t.id for t in tasks}
    tasks = [
        attrs.evolve(
            t,
            blocks=tuple(b for b in t.blocks if b in ids),
            blocked_by=tuple(b for b in t.blocked_by if b in ids),
        )
        if t.blocks or t.blocked_by
        else t
        for t in tasks
    ]
    return attrs.evolve(tc, tasks=tuple(tasks), revision=tc.revision + 1)


def todo_lines(tasks: Sequence[Task], escape: Callable[[str], str] = str) -> list[str]:
    """``- [x] done``, ``- [~] doing``, ``- [ ] to do`` (priority shown unless medium)."""
    lines = []
    for task in tasks:
        priority = task.priority
        suffix = f" ({escape(priority)} priority)" if priority and priority != "medium" else ""
        lines.append(f"- {MARKS.get(task.state, '[ ]')} {escape(task.subject)}{suffix}")
    return lines


def render_result(tc: TasksContext) -> str:
    """The full ``todo_write`` result: the header with the revision, then every todo."""
    header = f"Todo list updated (revision {tc.revision})"
    if not tc.tasks:
        return f"{header}: the list is empty."
    return "\n".join([f"{header}:", *todo_lines(tc.tasks)])
