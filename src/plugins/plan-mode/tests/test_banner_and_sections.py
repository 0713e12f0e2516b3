"""The banner (transient, never mutating, reasoning requests only) and stored sections."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from helpers import WRITES, config
from hookagent import (
    SUMMARY,
    AgentState,
    InMemoryAgentStateStore,
    Middleware,
    RuntimeContext,
    hookimpl,
)
from hookagent.errors import InvalidState
from hookagent.messages import Msg
from hookagent.models import ModelRequest, ModelResponse
from hookagent.testing import ScriptedModel, tool_call
from hookagent_plan_mode import PlanModeContext, enter_plan_mode_sync, get_plan_mode_sync
from hookagent_plan_mode.middleware import MODEL_ORDER, TOOL_ORDER, add_banner
from hookagent_plan_mode.options import PlanModeOptions
from hookagent_plan_mode.view import PlanModeView


class Outer:
    """A model middleware outside the banner (order 0 < 400): it must get its request back
    unchanged after the call (a retry would resend it)."""

    __name__ = "test-outer"

    def __init__(self) -> None:
        self.systems: list[Any] = []

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        async def middleware(request: Any, ctx: Any, call_next: Any) -> Any:
            before = request.system
            response = await call_next(request)
            self.systems.append((before, request.system))
            return response

        return Middleware(middleware, order=0)


def test_orders_are_the_documented_ones() -> None:
    assert (MODEL_ORDER, TOOL_ORDER) == (400, 100)


def test_the_banner_is_transient_and_the_received_request_is_not_changed() -> None:
    outer = Outer()
    model = ScriptedModel([tool_call("plan_enter"), "planning"])
    agent = config(model, plugins=(outer,), system_prompt="Be brief.").build()
    agent.call_sync("plan", RuntimeContext(user_id="ann", session_id="banner"))
    assert model.requests[0].system == "Be brief."  # not yet in plan mode
    system = model.requests[1].system or ""
    assert system.startswith("Be brief.\n\n<plan_mode>\n") and system.endswith("</plan_mode>")
    assert "plan_write" in system  # the plan tools are offered: the banner names them
    assert outer.systems == [("Be brief.", "Be brief."), ("Be brief.", "Be brief.")]
    history = agent.get_agent_state_sync("ann", "banner").context
    assert all("plan_mode" not in m.text for m in history)  # never in durable history


def test_without_the_plan_tools_the_banner_says_the_application_ends_it() -> None:
    model = ScriptedModel([tool_call("write_file", path="a", text="b"), "ok"])
    agent = config(model, tool_groups=[]).build()
    ctx = RuntimeContext(user_id="ann", session_id="app-only")
    enter_plan_mode_sync(agent, ctx)
    agent.call_sync("hi", ctx)
    assert not any(t.name.startswith("plan_") for t in model.requests[0].tools)
    system = model.requests[0].system or ""
    assert "<plan_mode>" in system and "the application ends it" in system
    assert "plan_write" not in system
    # the denial does not send the model to tools it does not have either
    [denied] = agent.get_agent_state_sync("ann", "app-only").context[-2].tool_results
    assert denied.state == "denied" and "plan_exit" not in denied.output[0].text
    assert "Present your plan instead" in denied.output[0].text


@pytest.mark.anyio
async def test_a_summary_request_is_left_alone() -> None:
    ctx = RuntimeContext()
    ctx.put(PlanModeView, PlanModeView(True, False, PlanModeContext(True), PlanModeOptions()))
    got: list[ModelRequest] = []

    async def call_next(request: ModelRequest) -> ModelResponse:
        got.append(request)
        return ModelResponse(Msg.assistant("x"))

    summary = ModelRequest([Msg.user("a")], system="S", purpose=SUMMARY)
    await add_banner(summary, ctx, call_next)
    reasoning = ModelRequest([Msg.user("a")], system="S")
    await add_banner(reasoning, ctx, call_next)
    assert got[0] is summary
    assert got[1] is not reasoning and "<plan_mode>" in (got[1].system or "")
    assert reasoning.system == "S"


def _store_with(section: Any, session: str) -> InMemoryAgentStateStore:
    store = InMemoryAgentStateStore()
    state = AgentState(session_id=session, user_id="ann")
    state.put_section("plan_mode_context", section)

    async def save() -> None:
        await store.save_if_version("ann", session, state, 0)

    anyio.run(save)
    return store


def test_a_slot_saved_with_the_old_minimal_shape_is_in_plan_mode() -> None:
    WRITES.clear()
    store = _store_with({"active": True, "plan_file": "PLAN.md"}, "old")
    model = ScriptedModel([tool_call("write_file", path="a", text="b"), "x"])
    agent = config(model, store=store).build()
    ctx = RuntimeContext(user_id="ann", session_id="old")
    assert get_plan_mode_sync(agent, ctx) == PlanModeContext(True, "PLAN.md")
    agent.call_sync("write", ctx)
    assert WRITES == []


def test_a_broken_section_fails_the_call_with_a_typed_error_and_changes_nothing() -> None:
    store = _store_with({"plan_active": "maybe"}, "broken")
    agent = config(ScriptedModel(default="x"), store=store).build()
    with pytest.raises(InvalidState, match=r"plan_mode_context\.plan_active"):
        agent.call_sync("hi", RuntimeContext(user_id="ann", session_id="broken"))
    stored = agent.get_agent_state_sync("ann", "broken")
    assert stored.extensions["plan_mode_context"] == {"plan_active": "maybe"}
