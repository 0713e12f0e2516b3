"""Subagents spawned from a tool while plan mode is active inherit it (real subagent calls)."""

from __future__ import annotations

from typing import Any

from helpers import WRITES, calls, config, read_notes, result_text, write_file
from hookagent import AgentConfig, AgentRun, InMemoryAgentStateStore, RuntimeContext, tool
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import PlanModeContext, get_plan_mode_sync
from hookagent_plan_mode.options import PlanModeOptions
from hookagent_plan_mode.view import PlanModeView, inherited_from


def _child(model: ScriptedModel, store: InMemoryAgentStateStore) -> AgentConfig:
    return config(model, store=store, name="child")


def test_a_subagent_spawned_while_active_inherits_plan_mode() -> None:
    WRITES.clear()
    store = InMemoryAgentStateStore()
    child_model = ScriptedModel(
        [
            tool_call("write_file", path="c", text="d"),  # denied: the child's turn ends
            tool_call("write_file", path="c", text="d"),  # its own later call
            "child done",
        ]
    )
    child = _child(child_model, store).build()

    @tool(read_only=False)
    async def research(topic: str, ctx: RuntimeContext) -> str:
        """Ask the research subagent."""
        sub = ctx.derive(session_id=f"{ctx.session_id}/research")
        return (await child.call(topic, sub)).text

    parent_model = ScriptedModel(
        [tool_call("plan_enter"), tool_call("research", topic="ports"), "planned"]
    )
    parent = config(
        parent_model,
        store=store,
        tools=(research, write_file, read_notes),
        plugin_options={"plan-mode": {"also_allow": ["research"]}},
    ).build()
    ctx = RuntimeContext(user_id="ann", session_id="lead")
    parent.call_sync("plan the port change", ctx)

    # the child ran in plan mode: its write was denied, it saw the banner with the note
    assert WRITES == []
    child_history = child.get_agent_state_sync("ann", "lead/research").context
    denied = [b for m in child_history for b in m.tool_results]
    assert denied[0].state == "denied"
    assert "inherited plan mode from its parent run" in result_text(denied[0])
    assert "subagent of a run in plan mode" in (child_model.requests[0].system or "")
    # ... without writing plan mode into its own slot
    child_ctx = RuntimeContext(user_id="ann", session_id="lead/research")
    assert not get_plan_mode_sync(child, child_ctx).plan_active

    # called on its own (not from a parent in plan mode), the child writes
    child.call_sync("write now", child_ctx)
    assert WRITES == ["c=d"]


def test_a_subagent_spawned_after_the_parent_left_plan_mode_is_free() -> None:
    WRITES.clear()
    store = InMemoryAgentStateStore()
    child_model = ScriptedModel([tool_call("write_file", path="c", text="d"), "child done"])
    child = _child(child_model, store).build()

    @tool(read_only=False)
    async def research(topic: str, ctx: RuntimeContext) -> str:
        """Ask the research subagent."""
        return (await child.call(topic, ctx.derive(session_id="sub"))).text

    parent_model = ScriptedModel(
        [
            tool_call("plan_enter"),
            tool_call("plan_exit"),
            tool_call("research", topic="ports"),  # same call, after plan_exit
            "done",
        ]
    )
    parent = config(parent_model, store=store, tools=(research, write_file, read_notes)).build()
    parent.call_sync("go", RuntimeContext(user_id="ann", session_id="lead2"))
    assert WRITES == ["c=d"]


def test_a_subagent_spawned_in_the_step_of_plan_exit_still_inherits() -> None:
    WRITES.clear()
    store = InMemoryAgentStateStore()
    child = _child(ScriptedModel([tool_call("write_file", path="c", text="d")]), store).build()

    @tool(read_only=False)
    async def research(topic: str, ctx: RuntimeContext) -> str:
        """Ask the research subagent."""
        return (await child.call(topic, ctx.derive(session_id="sub4"))).text

    parent = config(
        ScriptedModel(
            [tool_call("plan_enter"), calls(("plan_exit", {}), ("research", {"topic": "x"})), "ok"]
        ),
        store=store,
        tools=(research,),
        plugin_options={"plan-mode": {"also_allow": ["research"]}},
    ).build()
    parent.call_sync("go", RuntimeContext(user_id="ann", session_id="lead4"))
    assert WRITES == []


def test_a_subagent_cannot_end_the_plan_mode_it_inherited() -> None:
    store = InMemoryAgentStateStore()
    child_model = ScriptedModel([tool_call("plan_exit"), "cannot"])
    child = _child(child_model, store).build()

    @tool(read_only=False)
    async def research(topic: str, ctx: RuntimeContext) -> str:
        """Ask the research subagent."""
        return (await child.call(topic, ctx.derive(session_id="sub3"))).text

    parent = config(
        ScriptedModel([tool_call("plan_enter"), tool_call("research", topic="x"), "ok"]),
        store=store,
        tools=(research,),
        plugin_options={"plan-mode": {"also_allow": ["research"]}},
    ).build()
    ctx = RuntimeContext(user_id="ann", session_id="lead3")
    parent.call_sync("go", ctx)
    [result] = [b for m in child_model.requests[1].messages for b in m.tool_results]
    assert result.state == "error" and "InheritedPlanMode" in result_text(result)
    assert get_plan_mode_sync(parent, ctx).plan_active


def test_a_view_left_by_a_finished_call_is_not_inherited() -> None:
    """An application reusing a context after a call in plan mode does not pass it on."""
    WRITES.clear()
    store = InMemoryAgentStateStore()
    agent = config(ScriptedModel([tool_call("plan_enter"), "planning"]), store=store).build()
    ctx = RuntimeContext(user_id="ann", session_id="reuse")
    agent.call_sync("plan", ctx)
    assert ctx.get(PlanModeView) is not None and ctx.get(PlanModeView).active  # type: ignore[union-attr]

    other = config(
        ScriptedModel([tool_call("write_file", path="o", text="p"), "written"]), store=store
    ).build()
    other.call_sync("write", ctx.derive(session_id="elsewhere", run_id=None))
    assert WRITES == ["o=p"]


def test_inherited_from_needs_an_active_view_of_another_running_run() -> None:
    section = PlanModeContext(True)

    class FakeRun:
        def __init__(self, status: str) -> None:
            self.status = status

    def view(run: Any, active: bool = True) -> PlanModeView:
        return PlanModeView(active, False, section, PlanModeOptions(), run)

    me: Any = FakeRun("running")
    running: Any = FakeRun("running")
    assert inherited_from(view(running), me)
    assert not inherited_from(view(FakeRun("done")), me)
    assert not inherited_from(view(running, active=False), me)
    assert not inherited_from(view(me), me)
    assert not inherited_from(view(None), me)
    assert not inherited_from(None, me)
    assert AgentRun  # the real type the kernel puts on the context
