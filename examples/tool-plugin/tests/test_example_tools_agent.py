"""The plugin inside a real agent, with only the fixtures of hookagent's pytest plugin.

``register_plugin`` registers the plugin for this test only, ``agent_config()`` builds a
configuration with entry-point autoload off, an in-memory store and ``scripted_model``,
so nothing installed on the machine can change what these tests see.
"""

from __future__ import annotations

import importlib.metadata as md

import pytest
from hookagent import (
    Msg,
    RuntimeContext,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    create_plugin_manager,
)
from hookagent.testing import tool_call
from hookagent_example_tools import AuditLog, ExampleTools
from hookagent_example_tools import plugin as example_plugin

pytestmark = pytest.mark.anyio


def ctx() -> RuntimeContext:
    return RuntimeContext(user_id="alice", session_id="s1").put(AuditLog, AuditLog())


def only_result(message: Msg) -> ToolResultBlock:
    """The one tool result of a ``tool`` message (what the model receives next)."""
    assert message.role == "tool"
    (result,) = message.tool_results
    return result


async def test_calculator_result_reaches_the_model(
    register_plugin, agent_config, scripted_model
) -> None:
    register_plugin(example_plugin)
    scripted_model.queue(tool_call("calculator", expression="2+3"), "the answer is 5")
    async with agent_config().build() as agent:
        reply = await agent.call("what is 2+3?", ctx())
    assert reply.text == "the answer is 5"
    assert len(scripted_model.requests) == 2
    result = only_result(scripted_model.requests[1].messages[-1])
    assert result.name == "calculator" and result.state == "success"
    assert result.output == (TextBlock("5"),)
    scripted_model.assert_all_used()


async def test_the_model_is_given_each_tool_schema(
    register_plugin, agent_config, scripted_model
) -> None:
    register_plugin(example_plugin)
    scripted_model.queue("hello")
    async with agent_config().build() as agent:
        await agent.call("hi", ctx())
    tools = {spec.name: spec for spec in scripted_model.requests[0].tools}
    assert sorted(tools) == ["calculator", "conversation_stats", "convert_units", "word_count"]
    assert tools["calculator"] == ToolSpec(
        "calculator",
        "Evaluate an arithmetic expression (numbers, + - * / // % ** and parentheses).",
        {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    )
    assert tools["convert_units"].parameters["properties"] == {
        "value": {"type": "number"},
        "from_unit": {"type": "string"},
        "to_unit": {"type": "string"},
    }
    # the RuntimeContext parameter is filled in by the kernel, never shown to the model
    assert tools["conversation_stats"].parameters["properties"] == {}


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (tool_call("calculator", expr="2"), "invalid arguments for 'calculator': unknown"),
        (tool_call("calculator"), "missing required argument(s) ['expression']"),
        (tool_call("calculator", expression=2), "expression: expected string, got int"),
        (tool_call("calculator", expression="open('x')"), "CalculatorError: Call is not allowed"),
        (tool_call("convert_units", value=1, from_unit="m", to_unit="kg"), "cannot convert"),
        (tool_call("no_such_tool", x=1), "unknown tool 'no_such_tool'"),
    ],
)
async def test_bad_calls_give_an_error_result_the_model_sees(
    register_plugin, agent_config, scripted_model, call, expected
) -> None:
    register_plugin(example_plugin)
    scripted_model.queue(call, "sorry")
    async with agent_config().build() as agent:
        assert (await agent.call("go", ctx())).text == "sorry"
    result = only_result(scripted_model.requests[1].messages[-1])
    assert result.state == "error"
    assert expected in result.text


async def test_context_tool_reads_the_conversation(
    register_plugin, agent_config, scripted_model
) -> None:
    register_plugin(example_plugin)
    scripted_model.queue("first reply", tool_call("conversation_stats"), "done")
    async with agent_config().build() as agent:
        await agent.call("one", ctx())
        await agent.call("two", ctx())
    result = only_result(scripted_model.requests[2].messages[-1])
    # user, assistant, user, assistant(tool_use) were in the history when the tool ran
    assert result.text == '{"messages":4,"by_role":{"assistant":2,"user":2}}'


async def test_middleware_audits_every_call(register_plugin, agent_config, scripted_model) -> None:
    register_plugin(example_plugin)
    scripted_model.queue(
        tool_call("word_count", text="one two three"),
        tool_call("calculator", expression="1/0"),
        "done",
    )
    call_ctx = ctx()
    async with agent_config().build() as agent:
        await agent.call("count", call_ctx)
    log = call_ctx.get(AuditLog)
    assert log is not None and log.tools() == ["word_count", "calculator"]
    first, second = log.entries
    assert first.arguments == {"text": "one two three"} and first.state == "success"
    assert second.state == "error" and second.truncated_chars == 0
    assert first.duration_ms >= 0
    assert only_result(scripted_model.requests[1].messages[-1]).text == "3"


async def test_middleware_caps_long_output(register_plugin, agent_config, scripted_model) -> None:
    register_plugin(ExampleTools(max_output_chars=20))
    scripted_model.queue(tool_call("calculator", expression="2 ** 1000"), "big")
    call_ctx = ctx()
    async with agent_config().build() as agent:
        await agent.call("big number", call_ctx)
        stored = await agent.get_agent_state("alice", "s1")
    full = str(2**1000)
    result = only_result(scripted_model.requests[1].messages[-1])
    assert result.state == "success"
    assert result.text == f"{full[:20]}\n[output truncated: {len(full) - 20} more characters]"
    (entry,) = call_ctx.get(AuditLog).entries
    assert entry.truncated_chars == len(full) - 20
    # the durable history holds what the model saw, not the full output
    assert only_result(stored.context[2]) == result
    assert full not in stored.to_json()


async def test_hook_recorder_sees_the_hooks(
    register_plugin, hookagent_pm, hook_recorder, agent_config, scripted_model
) -> None:
    register_plugin(example_plugin)
    # the registration hook, called the way hookagent calls it: one register callback
    seen: list[tuple[str, str | None]] = []

    def register(func, *, name=None, description=None, group=None) -> None:
        seen.append((name or func.__name__, group))

    hookagent_pm.hook.hookagent_register_tools(register=register)
    (call,) = hook_recorder.named("hookagent_register_tools")
    assert call.plugins == ("hookagent_example_tools.plugin",)
    assert seen == [
        ("calculator", "math"),
        ("convert_units", "math"),
        ("word_count", "text"),
        ("conversation_stats", "session"),
    ]
    # the calls an agent makes during a run are recorded too
    scripted_model.queue(tool_call("word_count", text="a b"), "2 words")
    async with agent_config().build() as agent:
        await agent.call("count", ctx())
    names = hook_recorder.names()
    assert "hookagent_build_model_request" in names
    assert "hookagent_before_persist" in names


def test_entry_point_is_declared() -> None:
    (ep,) = [e for e in md.entry_points(group="hookagent") if e.name == "example-tools"]
    assert ep.value == "hookagent_example_tools.plugin"
    assert ep.dist is not None and ep.dist.name == "hookagent-example-tools"
    assert ep.load() is example_plugin


def test_entry_point_loads_with_autoload(monkeypatch) -> None:
    monkeypatch.delenv("HOOKAGENT_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("HOOKAGENT_BLOCKED_PLUGINS", raising=False)
    pm = create_plugin_manager(autoload=True)
    assert pm.get_plugin("example-tools") is example_plugin
    (info,) = [p for p in pm.plugin_infos if p.name == "example-tools"]
    assert (info.distribution, info.status) == ("hookagent-example-tools", "loaded")
    impls = {i.plugin_name for i in pm.hook.hookagent_register_tools.get_hookimpls()}
    assert "example-tools" in impls


def test_blocking_the_entry_point_leaves_it_out() -> None:
    pm = create_plugin_manager(autoload=True, blocked=["example-tools"])
    assert pm.get_plugin("example-tools") is None
    (info,) = [p for p in pm.plugin_infos if p.name == "example-tools"]
    assert info.status == "blocked"
