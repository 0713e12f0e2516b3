"""todo_write's rules (harness.md §2): whole-list replacement, one in_progress, nothing
changed by a bad list, ids and created_at kept by content, revision bumps, rendering."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hookagent_tasks import (
    TaskLimitExceeded,
    TasksContext,
    TodoValidationError,
    render_result,
    replace_todos,
)
from hookagent_tasks.model import MAX_TODO_CONTENT, MAX_TODOS


def ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"{next(counter):032x}"


def write(tc: TasksContext, *todos: Any, at: float = 100.0, make_id: Any = None) -> TasksContext:
    return replace_todos(tc, list(todos), now=lambda: at, make_id=make_id or ids())


def todo(content: str, status: str = "pending", **kw: Any) -> dict[str, Any]:
    return {"content": content, "status": status, **kw}


def test_the_whole_list_is_replaced() -> None:
    tc = write(TasksContext(), todo("a"), todo("b"), todo("c"))
    tc = write(tc, todo("c", "completed"), todo("d"))
    assert [(t.subject, t.state) for t in tc.tasks] == [("c", "completed"), ("d", "pending")]


def test_at_most_one_in_progress() -> None:
    with pytest.raises(TodoValidationError, match="at most one todo may be in_progress"):
        write(TasksContext(), todo("a", "in_progress"), todo("b", "in_progress"))
    assert (
        write(TasksContext(), todo("a", "in_progress"), todo("b")).tasks[0].state == "in_progress"
    )


@pytest.mark.parametrize(
    ("todos", "message"),
    [
        ([todo("a", "done")], r"todos\[0\]\.status: 'done' is not one of"),
        ([todo("a"), todo("   ")], r"todos\[1\]\.content: a todo needs non-blank text"),
        ([{"status": "pending"}], r"todos\[0\]\.content"),
        ([{"content": 3, "status": "pending"}], r"todos\[0\]\.content"),
        ([todo("a", priority="urgent")], r"todos\[0\]\.priority: 'urgent'"),
        ([todo("a", owner="me")], r"unknown field\(s\) \['owner'\]"),
        (["a"], r"todos\[0\]: expected an object"),
    ],
)
def test_a_bad_list_changes_nothing(todos: list[Any], message: str) -> None:
    before = write(TasksContext(), todo("keep me", "in_progress"))
    snapshot = repr(before)
    with pytest.raises(TodoValidationError, match=message):
        replace_todos(before, todos)
    assert repr(before) == snapshot and before.revision == 1


def test_not_a_list_is_refused() -> None:
    with pytest.raises(TodoValidationError, match="todos must be a list"):
        replace_todos(TasksContext(), {"content": "a"})


def test_limits() -> None:
    with pytest.raises(TaskLimitExceeded, match=f"at most {MAX_TODOS}"):
        replace_todos(TasksContext(), [todo(f"t{i}") for i in range(MAX_TODOS + 1)])
    with pytest.raises(TaskLimitExceeded, match=f"at most {MAX_TODO_CONTENT}"):
        replace_todos(TasksContext(), [todo("x" * (MAX_TODO_CONTENT + 1))])
    assert (
        len(replace_todos(TasksContext(), [todo(f"t{i}") for i in range(MAX_TODOS)]).tasks)
        == MAX_TODOS
    )


def test_ids_and_created_at_are_kept_by_content() -> None:
    first = write(TasksContext(), todo("a"), todo("b"), at=1.0)
    second = write(
        first,
        todo("new"),
        todo("b", "completed"),
        todo("a", "in_progress"),
        at=2.0,
        make_id=lambda: "f" * 32,
    )
    by_subject = {t.subject: t for t in second.tasks}
    old = {t.subject: t for t in first.tasks}
    assert by_subject["a"].id == old["a"].id and by_subject["a"].created_at == 1.0
    assert by_subject["b"].id == old["b"].id and by_subject["b"].created_at == 1.0
    assert by_subject["new"].id == "f" * 32 and by_subject["new"].created_at == 2.0
    assert len({t.id for t in second.tasks}) == 3


def test_duplicate_contents_each_keep_one_id() -> None:
    first = write(TasksContext(), todo("same"), todo("same"))
    second = write(
        first, todo("same", "completed"), todo("same"), todo("same"), make_id=lambda: "e" * 32
    )
    assert [t.id for t in second.tasks] == [first.tasks[0].id, first.tasks[1].id, "e" * 32]


def test_content_is_normalised_and_matched_normalised() -> None:
    first = write(TasksContext(), todo("  write   the\ntests "))
    assert first.tasks[0].subject == "write the tests"
    assert write(first, todo("write the tests")).tasks[0].id == first.tasks[0].id


def test_priority_lives_in_metadata() -> None:
    tc = write(TasksContext(), todo("a", priority="high"), todo("b"))
    assert tc.tasks[0].metadata == {"priority": "high"} and tc.tasks[1].priority == "medium"
    again = write(tc, todo("a", priority="low"))
    assert again.tasks[0].priority == "low"


def test_revision_bumps_on_every_valid_update_clearing_included() -> None:
    tc = write(TasksContext(), todo("a"))
    assert tc.revision == 1
    tc = write(tc, todo("a"))
    assert tc.revision == 2
    tc = write(tc)
    assert tc.revision == 3 and tc.tasks == ()
    with pytest.raises(TodoValidationError):
        write(tc, todo(""))
    assert tc.revision == 3


def test_links_to_removed_tasks_are_dropped() -> None:
    import attrs

    tc = write(TasksContext(), todo("a"), todo("b"))
    a, b = tc.tasks
    tc = attrs.evolve(
        tc, tasks=(attrs.evolve(a, blocks=(b.id,)), attrs.evolve(b, blocked_by=(a.id,)))
    )
    tc = write(tc, todo("a"))
    assert tc.tasks[0].blocks == ()


def test_render() -> None:
    tc = write(
        TasksContext(),
        todo("done", "completed"),
        todo("doing", "in_progress", priority="high"),
        todo("later"),
    )
    assert render_result(tc) == (
        "Todo list updated (revision 1):\n- [x] done\n- [~] doing (high priority)\n- [ ] later"
    )
    assert render_result(write(tc)) == "Todo list updated (revision 2): the list is empty."
