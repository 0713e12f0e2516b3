"""plan_exit behind a confirmation, approvals that do not lift plan mode, the application API."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import WRITES, Events, config, read_notes, result_text, write_file
from hookagent import (
    Approve,
    GenerateReason,
    InMemoryAgentStateStore,
    Reject,
    RuntimeContext,
    ask,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import (
    enter_plan_mode,
    enter_plan_mode_sync,
    exit_plan_mode,
    exit_plan_mode_sync,
    get_plan_mode_sync,
    read_plan_sync,
)
from workspace_double import WorkspacePlugin

PLAN = "step 1\nstep 2"


class AskFirst:
    """Stands in for a permission rule ``ask`` on some tools (what the permissions plugin's
    ask rules do: ``hookagent.ask`` until a person approves that very call)."""

    __name__ = "test-ask"

    def __init__(self, *tools: str) -> None:
        self.tools = set(tools)

    @hookimpl
    def hookagent_wrap_tool_call(self) -> Any:
        async def middleware(call: Any, ctx: Any, call_next: Any) -> Any:
            if call.use.name in self.tools and not call.approved:
                return ask(call, f"Allow {call.use.name}?")
            return await call_next(call)

        return middleware


def _suspended_on_exit(store: Any, session: str) -> tuple[Any, RuntimeContext, Any, str]:
    model = ScriptedModel(
        [tool_call("plan_enter"), tool_call("plan_write", content=PLAN), tool_call("plan_exit")]
    )
    agent = config(model, plugins=(AskFirst("plan_exit"),), store=store).build()
    ctx = RuntimeContext(user_id="ann", session_id=session)
    reply = agent.call_sync("plan it", ctx)
    assert reply.metadata["generate_reason"] == GenerateReason.SUSPENDED
    [pending] = reply.metadata["pending"]
    assert pending["tool"] == "plan_exit"
    return agent, ctx, model, pending["tool_use_id"]


def test_plan_exit_waiting_for_confirmation_leaves_plan_mode_active_until_approved() -> None:
    WRITES.clear()
    store = InMemoryAgentStateStore()
    agent, ctx, model, use_id = _suspended_on_exit(store, "confirm")
    # suspended and saved: still in plan mode, for this agent and for a fresh one
    assert get_plan_mode_sync(agent, ctx).plan_active
    other = config(ScriptedModel([tool_call("write_file", path="a", text="b"), "x"]), store=store)
    assert get_plan_mode_sync(other.build(), ctx).plan_active

    model.queue("The plan is approved; starting.")
    done = agent.call_sync(answers=[Approve(use_id)], ctx=ctx.derive(run_id=None))
    assert done.metadata["generate_reason"] == GenerateReason.COMPLETED
    assert not get_plan_mode_sync(agent, ctx).plan_active
    [exit_result] = [
        b for m in model.requests[-1].messages for b in m.tool_results if b.name == "plan_exit"
    ]
    assert PLAN in result_text(exit_result)  # no workspace: the plan came from the section


def test_rejecting_plan_exit_keeps_plan_mode() -> None:
    agent, ctx, model, use_id = _suspended_on_exit(InMemoryAgentStateStore(), "reject")
    model.queue("Understood, I keep planning.")
    agent.call_sync(answers=[Reject(use_id, "not yet")], ctx=ctx.derive(run_id=None))
    assert get_plan_mode_sync(agent, ctx).plan_active


def test_an_approved_call_is_still_blocked_when_plan_mode_began_while_it_waited() -> None:
    WRITES.clear()
    model = ScriptedModel([tool_call("write_file", path="a", text="b")])
    agent = config(model, plugins=(AskFirst("write_file"),)).build()
    ctx = RuntimeContext(user_id="ann", session_id="approved")
    reply = agent.call_sync("write", ctx)
    [pending] = reply.metadata["pending"]
    enter_plan_mode_sync(agent, ctx)  # the application switches to plan mode meanwhile
    model.queue("blocked, planning instead")
    done = agent.call_sync(answers=[Approve(pending["tool_use_id"])], ctx=ctx.derive(run_id=None))
    assert done.text == "blocked, planning instead" and WRITES == []
    [result] = [b for m in model.requests[-1].messages for b in m.tool_results]
    assert result.state == "denied" and "Plan mode blocked the tool 'write_file'" in result_text(
        result
    )


def test_enter_and_exit_persist_at_once_and_another_instance_sees_them() -> None:
    store = InMemoryAgentStateStore()
    ctx = RuntimeContext(user_id="bob", session_id="fresh")
    a = config(ScriptedModel(default="x"), store=store).build()
    b = config(ScriptedModel(default="x"), store=store).build()
    section = enter_plan_mode_sync(a, ctx)  # creates the session
    assert section.plan_active
    assert get_plan_mode_sync(b, ctx).plan_active
    stored = b.get_agent_state_sync("bob", "fresh")
    assert stored.extensions["plan_mode_context"] == {
        "plan_active": True,
        "current_plan_file": None,
    }
    assert stored.extensions["admin_log"][-1]["reason"] == "plan mode: entered"
    out = exit_plan_mode_sync(b, ctx)
    assert out.was_active and out.plan.text is None and "no plan" in (out.plan.missing or "")
    assert not get_plan_mode_sync(a, ctx).plan_active


def test_exit_on_a_session_that_does_not_exist_creates_nothing() -> None:
    store = InMemoryAgentStateStore()
    agent = config(ScriptedModel(default="x"), store=store).build()
    out = exit_plan_mode_sync(agent, RuntimeContext(user_id="bob", session_id="none"))
    assert not out.was_active
    got = agent.kernel.portal().call(store.get_versioned, "bob", "none")
    assert got.state is None


def test_the_api_inside_a_call_changes_that_call_and_emits_events(
    workspace: WorkspacePlugin,
) -> None:
    seen: dict[str, Any] = {}

    async def switch(mode: str, ctx: RuntimeContext) -> str:
        """An application tool that toggles plan mode from inside the call."""
        from hookagent import Agent

        agent = ctx.get(Agent)
        assert agent is not None
        if mode == "on":
            seen["on"] = await enter_plan_mode(agent, ctx)
        else:
            seen["off"] = await exit_plan_mode(agent, ctx)
        return mode

    events = Events()
    model = ScriptedModel(
        [
            tool_call("switch", mode="on"),
            tool_call("write_file", path="a", text="b"),  # blocked in the same call
        ]
    )
    agent = config(
        model,
        tools=(switch, write_file, read_notes),
        plugins=(events, workspace),
        plugin_options={"plan-mode": {"also_allow": ["switch"]}},
    ).build()
    ctx = RuntimeContext(user_id="ann", session_id="in-call")
    reply = agent.call_sync("go", ctx)
    assert reply.metadata["generate_reason"] == GenerateReason.ALL_TOOLS_DENIED
    assert seen["on"].plan_active and get_plan_mode_sync(agent, ctx).plan_active
    assert [(e.data["active"], e.data["by"]) for e in events.of("plan_mode_changed")] == [
        (True, "api")
    ]
    model.queue(tool_call("switch", mode="off"), tool_call("write_file", path="a", text="b"), "ok")
    WRITES.clear()
    agent.call_sync("again", ctx.derive(run_id=None))
    assert seen["off"].was_active and WRITES == ["a=b"]


def test_no_workspace_keeps_the_plan_in_the_section() -> None:
    model = ScriptedModel([tool_call("plan_enter"), tool_call("plan_write", content=PLAN), "ok"])
    agent = config(model).build()
    ctx = RuntimeContext(user_id="ann", session_id="nows")
    agent.call_sync("plan", ctx)
    stored = agent.get_agent_state_sync("ann", "nows").extensions["plan_mode_context"]
    assert stored == {"plan_active": True, "current_plan_file": None, "plan_text": PLAN}
    plan = read_plan_sync(agent, ctx)
    assert plan.text == PLAN and "plan_mode_context" in plan.location


def test_a_plan_over_the_limit_is_refused_and_nothing_changes(workspace: WorkspacePlugin) -> None:
    model = ScriptedModel(
        [
            tool_call("plan_enter"),
            tool_call("plan_write", content="x" * 101),
            "ok",
        ]
    )
    agent = config(
        model, plugins=(workspace,), plugin_options={"plan-mode": {"max_plan_chars": 100}}
    ).build()
    ctx = RuntimeContext(user_id="ann", session_id="big")
    agent.call_sync("plan", ctx)
    [result] = [b for b in model.requests[2].messages[-1].tool_results]
    assert result.state == "error" and "PlanTooLarge" in result_text(result)
    assert "over the limit of 100" in result_text(result)
    assert not (workspace.for_session("ann", "big").root / "PLAN.md").exists()
    assert get_plan_mode_sync(agent, ctx).current_plan_file is None


@pytest.mark.parametrize("options", [{"nope": 1}, {"plan_file": "../x.md"}, {"max_plan_chars": -1}])
def test_bad_options_refuse_the_configuration(options: Any) -> None:
    from hookagent import ConfigurationError

    with pytest.raises(ConfigurationError, match="plan-mode"):
        config(ScriptedModel(default="x"), plugin_options={"plan-mode": options}).build()
