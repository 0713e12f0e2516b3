"""Plan mode in real runs: denial, plan, exit, then the write tool runs (issue 19's done-when)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import (
    WRITES,
    Events,
    calls,
    config,
    denied_results,
    read_notes,
    result_text,
    write_file,
)
from hookagent import GenerateReason, InMemoryAgentStateStore, RuntimeContext
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import get_plan_mode_sync, read_plan_sync
from workspace_double import WorkspacePlugin

PLAN = "1. read app.toml\n2. change the port\n3. restart"


def test_scripted_run_denies_the_write_tool_writes_the_plan_exits_and_then_writes(
    workspace: WorkspacePlugin, workspace_root: Path
) -> None:
    WRITES.clear()
    model = ScriptedModel(
        [
            tool_call("plan_enter"),
            # one step: the write is denied, the read runs (so the loop goes on)
            calls(("write_file", {"path": "app.toml", "text": "port=1"}), ("read_notes", {})),
            tool_call("plan_write", content=PLAN),
            tool_call("plan_exit"),
            "Here is the plan; say go.",
            # the next call, after plan mode: the write tool runs
            tool_call("write_file", path="app.toml", text="port=1"),
            "Done.",
        ]
    )
    events = Events()
    agent = config(model, plugins=(workspace, events)).build()
    ctx = RuntimeContext(user_id="ann", session_id="plan-1")

    reply = agent.call_sync("change the port", ctx)
    assert reply.metadata["generate_reason"] == GenerateReason.COMPLETED
    assert WRITES == []  # the write never ran while planning

    # the model saw the denial: the request after the blocked step holds it
    [denied] = denied_results(model.requests[2])
    assert denied.name == "write_file"
    text = result_text(denied)
    assert "Plan mode blocked the tool 'write_file'" in text
    assert "plan_write" in text and "plan_exit" in text  # how to leave it
    # the read-only call of the same step ran
    ran = [b for m in model.requests[2].messages for b in m.tool_results if b.name == "read_notes"]
    assert ran[0].state == "success"

    # the plan is the workspace file, and plan_exit returned it to the model
    plan_file = workspace.for_session("ann", "plan-1").root / "PLAN.md"
    assert plan_file.read_text() == PLAN
    exit_result = next(
        b for m in model.requests[4].messages for b in m.tool_results if b.name == "plan_exit"
    )
    assert exit_result.state == "success"
    assert "Plan mode ended" in result_text(exit_result) and PLAN in result_text(exit_result)
    assert not get_plan_mode_sync(agent, ctx).plan_active
    assert read_plan_sync(agent, ctx).text == PLAN

    # the next call runs the write tool
    reply = agent.call_sync("go", ctx.derive(run_id=None))
    assert reply.text == "Done." and WRITES == ["app.toml=port=1"]

    changes = [(e.data["active"], e.data["by"]) for e in events.of("plan_mode_changed")]
    assert changes == [(True, "plan_enter"), (False, "plan_exit")]
    assert [e.data["plan_file"] for e in events.of("plan_written")] == ["PLAN.md"]
    model.assert_all_used()


def test_a_step_whose_only_call_is_blocked_ends_the_turn_and_the_model_sees_it_next() -> None:
    WRITES.clear()
    model = ScriptedModel(
        [
            tool_call("plan_enter"),
            tool_call("write_file", path="a", text="b"),
            "ok, planning first",  # the next call's first answer
        ]
    )
    agent = config(model).build()
    ctx = RuntimeContext(user_id="ann", session_id="plan-2")
    reply = agent.call_sync("do it", ctx)
    assert reply.metadata["generate_reason"] == GenerateReason.ALL_TOOLS_DENIED
    agent.call_sync("why?", ctx.derive(run_id=None))
    [denied] = denied_results(model.requests[2])
    assert "Plan mode blocked" in result_text(denied) and WRITES == []


def test_a_new_agent_instance_on_the_same_store_is_still_in_plan_mode() -> None:
    WRITES.clear()
    store = InMemoryAgentStateStore()
    ctx = RuntimeContext(user_id="ann", session_id="reload")
    first = config(ScriptedModel([tool_call("plan_enter"), "planning"]), store=store).build()
    first.call_sync("plan it", ctx)
    first.close_sync()

    model = ScriptedModel([tool_call("write_file", path="x", text="y"), "blocked"])
    second = config(model, store=store).build()
    reply = second.call_sync("write now", ctx.derive(run_id=None))
    assert reply.metadata["generate_reason"] == GenerateReason.ALL_TOOLS_DENIED
    assert WRITES == []
    assert "<plan_mode>" in (model.requests[0].system or "")


def test_read_only_tools_and_the_allow_list_run_in_plan_mode() -> None:
    from hookagent import tool

    seen: list[str] = []

    @tool(read_only=False)
    def todo_write(todos: list[str]) -> str:
        """A stand-in for the task plugin's todo tool (not read-only, allowed by default)."""
        seen.append("todo")
        return "ok"

    @tool(read_only=False)
    def spawn_researcher(topic: str) -> str:
        """An application's subagent tool, allow-listed by the configuration."""
        seen.append("spawn")
        return "ok"

    model = ScriptedModel(
        [
            tool_call("plan_enter"),
            calls(
                ("read_notes", {}),
                ("todo_write", {"todos": ["a"]}),
                ("spawn_researcher", {"topic": "t"}),
                ("write_file", {"path": "p", "text": "t"}),
                ("no_such_tool", {}),
            ),
            "done",
        ]
    )
    agent = config(
        model,
        tools=(todo_write, spawn_researcher, write_file, read_notes),
        plugin_options={"plan-mode": {"also_allow": ["spawn_researcher"]}},
    ).build()
    agent.call_sync("plan", RuntimeContext(user_id="ann", session_id="allow"))
    results = {b.name: b for m in model.requests[2].messages for b in m.tool_results}
    assert results["read_notes"].state == "success"
    assert results["todo_write"].state == "success"
    assert results["spawn_researcher"].state == "success"
    assert results["write_file"].state == "denied"
    assert results["no_such_tool"].state == "denied"  # unknown: no read-only declaration
    assert "no such tool is registered" in result_text(results["no_such_tool"])
    assert seen == ["todo", "spawn"]


def test_outside_plan_mode_nothing_is_blocked_and_no_banner_is_added() -> None:
    WRITES.clear()
    model = ScriptedModel([tool_call("write_file", path="a", text="b"), "done"])
    agent = config(model, system_prompt="You are helpful.").build()
    agent.call_sync("write", RuntimeContext(user_id="ann", session_id="free"))
    assert WRITES == ["a=b"]
    assert all(r.system == "You are helpful." for r in model.requests)


@pytest.mark.parametrize("tool_name", ["plan_write", "plan_exit"])
def test_plan_tools_that_need_plan_mode_refuse_outside_it(tool_name: str) -> None:
    args = {"content": PLAN} if tool_name == "plan_write" else {}
    model = ScriptedModel([tool_call(tool_name, **args), "ok"])
    agent = config(model).build()
    ctx = RuntimeContext(user_id="ann", session_id=f"outside-{tool_name}")
    agent.call_sync("x", ctx)
    [result] = [b for m in model.requests[1].messages for b in m.tool_results]
    assert result.state == "error" and "NotInPlanMode" in result_text(result)
    state = agent.get_agent_state_sync("ann", ctx.session_id)
    assert "plan_mode_context" not in state.extensions  # nothing stored changed


def test_a_call_that_fails_after_plan_enter_keeps_plan_mode() -> None:
    """As documented: the kernel saves a failed call's sections without its partial history."""
    model = ScriptedModel([tool_call("plan_enter"), RuntimeError("the model server is down")])
    agent = config(model).build()
    ctx = RuntimeContext(user_id="ann", session_id="failed")
    with pytest.raises(Exception, match="down"):
        agent.call_sync("plan", ctx)
    assert get_plan_mode_sync(agent, ctx).plan_active
    assert [m.role for m in agent.get_agent_state_sync("ann", "failed").context] == ["user"]


@pytest.mark.parametrize("parallel", [None, True])
def test_calls_asked_for_in_the_step_of_plan_exit_stay_blocked(parallel: bool | None) -> None:
    """Leaving plan mode takes effect at the next step, whatever order the calls run in."""
    WRITES.clear()
    model = ScriptedModel(
        [
            tool_call("plan_enter"),
            calls(("plan_exit", {}), ("write_file", {"path": "a", "text": "b"})),
            tool_call("write_file", path="a", text="b"),  # the next step: it runs
            "done",
        ]
    )
    agent = config(model, parallel_tool_calls=parallel).build()
    agent.call_sync("go", RuntimeContext(user_id="ann", session_id=f"same-step-{parallel}"))
    results = {b.name: b for b in model.requests[2].messages[-1].tool_results}
    assert results["plan_exit"].state == "success"
    assert results["write_file"].state == "denied"
    assert "Plan mode ended in this step" in result_text(results["write_file"])
    assert WRITES == ["a=b"]  # only the call of the next step ran
    assert "<plan_mode>" not in (model.requests[2].system or "")


def test_entering_plan_mode_blocks_the_rest_of_the_same_step() -> None:
    WRITES.clear()
    model = ScriptedModel(
        [calls(("plan_enter", {}), ("write_file", {"path": "a", "text": "b"})), "planning"]
    )
    agent = config(model).build()
    agent.call_sync("go", RuntimeContext(user_id="ann", session_id="enter-step"))
    results = {b.name: b.state for b in model.requests[1].messages[-1].tool_results}
    assert results == {"plan_enter": "success", "write_file": "denied"} and WRITES == []
