"""The model tools through a real agent: todo_write and task_requirement_propose take the
state from the call, change it only when valid, and emit task_changed run events."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hookagent import UNCONDITIONAL, AgentConfig, AgentState, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_tasks import SECTION, TaskAdmin, TaskScope, parse_section, render_result

CTX = {"user_id": "ann", "session_id": "s1"}


def ctx() -> RuntimeContext:
    return RuntimeContext(**CTX)


async def stored(config: AgentConfig) -> AgentState:
    return await config.build().get_agent_state("ann", "s1")


def todo_call(*items: tuple[str, str]) -> Any:
    return tool_call("todo_write", todos=[{"content": c, "status": s} for c, s in items])


@pytest.mark.anyio
async def test_todo_write_replaces_the_list_and_renders_it(
    make_config: Callable[..., AgentConfig], events: Any
) -> None:
    model = ScriptedModel([todo_call(("plan", "completed"), ("build", "in_progress")), "done"])
    config = make_config(model)
    await config.build().call("go", ctx())
    tc = parse_section((await stored(config)).extensions[SECTION])
    assert [(t.subject, t.state) for t in tc.tasks] == [
        ("plan", "completed"),
        ("build", "in_progress"),
    ]
    result = [m for m in model.requests[1].messages if m.role == "tool"][-1].tool_results[0]
    assert result.state == "success" and result.text == render_result(tc)
    assert result.text.startswith("Todo list updated (revision 1):\n- [x] plan\n- [~] build")
    [changed] = events.of("task_changed")
    assert changed == {
        "section": "tasks_context",
        "revision": 1,
        "change": "todos",
        "representation": "full",
        "todos": 2,
    }


@pytest.mark.anyio
async def test_a_bad_list_is_an_error_result_and_changes_nothing(
    make_config: Callable[..., AgentConfig], events: Any
) -> None:
    model = ScriptedModel(
        [
            todo_call(("keep", "pending")),
            todo_call(("a", "in_progress"), ("b", "in_progress")),
            todo_call(("", "pending")),
            todo_call(("a", "finished")),
            "done",
        ]
    )
    config = make_config(model)
    await config.build().call("go", ctx())
    tc = parse_section((await stored(config)).extensions[SECTION])
    assert tc.revision == 1 and [t.subject for t in tc.tasks] == ["keep"]
    errors = [m.tool_results[0] for m in model.requests[-1].messages if m.role == "tool"][1:]
    assert [e.state for e in errors] == ["error", "error", "error"]
    assert "at most one todo may be in_progress" in errors[0].text
    assert "non-blank text" in errors[1].text
    assert "'finished' is not one of" in errors[2].text
    assert [e["revision"] for e in events.of("task_changed")] == [1]


def test_the_tools_schemas(make_config: Callable[..., AgentConfig]) -> None:
    tools = make_config().kernel.tools
    todo, propose = tools["todo_write"], tools["task_requirement_propose"]
    assert not todo.read_only and not propose.read_only
    assert todo.group == propose.group == "tasks"
    # the state comes from the context: no parameter names a session, a revision or a status
    assert todo.parameters["properties"].keys() == {"todos"} and todo.ctx_param == "ctx"
    item = todo.parameters["properties"]["todos"]["items"]
    assert item["properties"]["status"] == {"enum": ["pending", "in_progress", "completed"]}
    assert item["properties"]["priority"] == {"enum": ["high", "medium", "low"]}
    # exactly three parameters, all required
    assert list(propose.parameters["properties"]) == ["kind", "text", "source_ref"]
    assert propose.parameters["required"] == ["kind", "text", "source_ref"]
    assert propose.parameters["additionalProperties"] is False


def test_the_tools_are_only_offered_to_agents_that_ask(
    make_config: Callable[..., AgentConfig],
) -> None:
    assert "todo_write" not in make_config(tool_groups=[]).kernel.enabled_tools()[0]
    assert "todo_write" in make_config(tool_groups=["tasks"]).kernel.enabled_tools()[0]


@pytest.mark.anyio
async def test_proposals_are_deduplicated_candidates(
    make_config: Callable[..., AgentConfig], events: Any
) -> None:
    propose = lambda **kw: tool_call("task_requirement_propose", **kw)  # noqa: E731
    model = ScriptedModel(
        [
            propose(kind="CONSTRAINT", text="no new deps", source_ref="msg 1"),
            propose(kind="CONSTRAINT", text="no new deps", source_ref="msg 1"),
            propose(kind="WISH", text="x", source_ref="msg 1"),
            propose(kind="CONSTRAINT", text="  ", source_ref="msg 1"),
            propose(kind="CONSTRAINT", text="x", source_ref="msg 1", status="CONFIRMED"),
            "done",
        ]
    )
    config = make_config(model)
    agent = config.build()
    await TaskAdmin(agent).begin_task(
        "ann", TaskScope("T", "obj"), expected_revision=0, session_id="s1"
    )
    await agent.call("go", ctx())
    tc = parse_section((await stored(config)).extensions[SECTION])
    assert [(r.id, r.status, r.text) for r in tc.requirements] == [
        ("R1", "CANDIDATE", "no new deps")
    ]
    assert tc.revision == 2
    results = [m.tool_results[0] for m in model.requests[-1].messages if m.role == "tool"]
    assert results[0].text.startswith("Proposed R1 (CONSTRAINT) as a CANDIDATE")
    assert results[1].text == "Already proposed as R1 (CANDIDATE); nothing changed."
    assert [r.state for r in results[2:]] == ["error", "error", "error"]
    assert "'WISH' is not one of" in results[2].text
    assert "text must not be blank" in results[3].text
    assert "unknown argument(s) ['status']" in results[4].text  # the model cannot confirm
    assert events.of("task_changed") == [
        {
            "section": "tasks_context",
            "revision": 2,
            "change": "requirement_proposed",
            "requirement_id": "R1",
        }
    ]


@pytest.mark.anyio
async def test_a_proposal_without_a_task_is_refused(
    make_config: Callable[..., AgentConfig],
) -> None:
    model = ScriptedModel(
        [tool_call("task_requirement_propose", kind="CONSTRAINT", text="x", source_ref="s"), "done"]
    )
    config = make_config(model)
    await config.build().call("go", ctx())
    [result] = [m.tool_results[0] for m in model.requests[-1].messages if m.role == "tool"]
    assert result.state == "error" and "begin_task first" in result.text
    assert SECTION not in (await stored(config)).extensions


@pytest.mark.anyio
async def test_a_slot_with_the_old_minimal_shape_is_read_and_updated(
    make_config: Callable[..., AgentConfig],
) -> None:
    model = ScriptedModel([todo_call(("old one", "completed"), ("new", "pending")), "done"])
    config = make_config(model)
    agent = config.build()
    # a slot as the kernel wrote it before the plugins owned the section
    old = {
        "session_id": "s1",
        "user_id": "ann",
        "context": [],
        "tasks_context": {
            "todos": [{"content": "old one", "status": "in_progress", "id": "t-1"}],
            "revision": 4,
            "objective": "legacy",
        },
        "schema_version": 1,
    }
    store = await config.kernel.store()
    await store.save_if_version("ann", "s1", AgentState.from_json(json.dumps(old)), UNCONDITIONAL)
    await agent.call("go", ctx())
    assert "- [~] old one" in model.requests[0].messages[-1].text  # the projection read it
    tc = parse_section((await stored(config)).extensions[SECTION])
    assert tc.revision == 5 and tc.objective == "legacy"
    assert tc.tasks[0].metadata.get("legacy_id") == "t-1"  # kept by content, with its id
