"""The examples of docs/testing-plugins.md, run for real (the doc copies them from here)."""

from __future__ import annotations

import pytest
from hookagent import (
    ModelRequest,
    ModelUnavailable,
    Msg,
    RunEvent,
    RuntimeContext,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call
from hookagent_example_tools import plugin as example_plugin

pytestmark = pytest.mark.anyio


class NotesPlugin:
    """A tiny plugin under test: counts the calls of a session in its own state section."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    @hookimpl
    def hookagent_before_persist(self, state, ctx, outcome) -> None:
        section = state.extensions.setdefault("notes", {"calls": 0})
        section["calls"] += 1

    @hookimpl
    async def hookagent_on_run_event(self, event) -> None:
        self.events.append(event)


async def test_queue_replies_and_inspect_requests(
    register_plugin, agent_config, scripted_model
) -> None:
    register_plugin(example_plugin)
    scripted_model.queue(tool_call("word_count", text="to be or not"), "4 words")
    config = agent_config(system_prompt="count words")
    async with config.build() as agent:
        reply = await agent.call("count: to be or not", RuntimeContext(session_id="s"))
    assert reply.text == "4 words"
    first, second = scripted_model.requests
    assert first.system == "count words"
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[-1].tool_results[0].text == "4"
    scripted_model.assert_all_used()


async def test_a_step_can_be_a_function_of_the_request(agent_config, scripted_model) -> None:
    def echo(request: ModelRequest) -> str:
        return f"you said {request.messages[-1].text!r}"

    scripted_model.queue(echo)
    async with agent_config().build() as agent:
        reply = await agent.call("hello", RuntimeContext(session_id="s"))
    assert reply.text == "you said 'hello'"


async def test_a_failing_model_keeps_the_input(agent_config, scripted_model) -> None:
    scripted_model.queue(ModelUnavailable("provider down"), "back again")
    ctx = RuntimeContext(user_id="u", session_id="s")
    async with agent_config().build() as agent:
        with pytest.raises(ModelUnavailable):
            await agent.call("first try", ctx)
        state = await agent.get_agent_state("u", "s")
        assert [m.text for m in state.context] == ["first try"]
        await agent.call("second try", RuntimeContext(user_id="u", session_id="s"))
    assert [m.text for m in scripted_model.requests[1].messages] == ["first try", "second try"]


async def test_streaming_model(register_plugin, agent_config) -> None:
    model = ScriptedModel(["a streamed answer"], stream=True, chunk=4)
    plugin = register_plugin(NotesPlugin())
    async with agent_config(model=model).build() as agent:
        await agent.call("hi", RuntimeContext(session_id="s"))
    deltas = [e.data["text"] for e in plugin.events if e.kind == "model_delta"]
    assert deltas == ["a st", "ream", "ed a", "nswe", "r"]


async def test_recorder_sees_the_hooks_of_a_call(
    register_plugin, agent_config, scripted_model, hook_recorder
) -> None:
    plugin = register_plugin(NotesPlugin())
    scripted_model.queue("one", "two")
    async with agent_config().build() as agent:
        for text in ("a", "b"):
            await agent.call(text, RuntimeContext(user_id="u", session_id="s"))
        state = await agent.get_agent_state("u", "s")
    assert state.extensions["notes"] == {"calls": 2}
    persists = hook_recorder.named("hookagent_before_persist")
    assert [c.kwargs["outcome"] for c in persists] == ["success", "success"]
    assert all(c.kwargs["ctx"].session_id == "s" for c in persists)
    kinds = [e.kind for e in plugin.events]
    assert kinds[:2] == ["run_started", "state_loaded"] and kinds[-1] == "run_finished"


def test_registration_hooks_through_hookagent_pm(
    register_plugin, hookagent_pm, hook_recorder
) -> None:
    register_plugin(example_plugin)
    names: list[str] = []

    def register(func, *, name=None, description=None, group=None) -> None:
        names.append(name or func.__name__)

    hookagent_pm.hook.hookagent_register_tools(register=register)
    assert names == ["calculator", "convert_units", "word_count", "conversation_stats"]
    (call,) = hook_recorder.named("hookagent_register_tools")
    assert call.plugins == ("hookagent_example_tools.plugin",)


def test_tool_call_builds_an_assistant_message() -> None:
    msg = tool_call("calculator", expression="1+1")
    assert isinstance(msg, Msg) and msg.role == "assistant"
    (use,) = msg.tool_uses
    assert (use.name, use.input) == ("calculator", {"expression": "1+1"})
