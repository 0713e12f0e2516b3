"""The demo model through a real agent: tool calls, answers, streaming, interrupts, options."""

from __future__ import annotations

import anyio
import pytest
from hookagent import (
    AgentConfig,
    InMemoryAgentStateStore,
    ModelError,
    RuntimeContext,
    create_plugin_manager,
)
from hookagent.messages import Msg
from hookagent.models import ModelDelta, ModelRequest, ModelResponse, ToolSpec
from hookagent_model_demo import DEMO_TOOLS, DemoModel, get_weather, slow_count
from hookagent_model_demo import plugin as demo_plugin


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def config(**kw: object) -> AgentConfig:
    kw.setdefault("model", "demo")
    kw.setdefault("tools", DEMO_TOOLS)
    return AgentConfig(
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
        plugins=[demo_plugin],
        **kw,  # type: ignore[arg-type]
    )


def ctx() -> RuntimeContext:
    return RuntimeContext(user_id="ann", session_id="s1")


@pytest.mark.anyio
async def test_weather_calls_the_tool_then_answers_with_its_result() -> None:
    async with config().build() as agent:
        reply = await agent.call("What's the weather in Lisbon?", ctx())
        state = await agent.get_agent_state("ann", "s1")
    assert reply.text == f"[demo model] get_weather says: {get_weather('Lisbon')}"
    roles = [m.role for m in state.context]
    assert roles == ["user", "assistant", "tool", "assistant"]
    use = state.context[1].tool_uses[0]
    assert (use.name, use.input) == ("get_weather", {"city": "Lisbon"})
    assert state.context[2].tool_results[0].id == use.id
    assert state.context[2].tool_results[0].state == "success"


@pytest.mark.anyio
async def test_replies_are_labelled_and_deterministic() -> None:
    texts = []
    for _ in range(2):
        async with config().build() as agent:
            a = await agent.call("hello there", ctx())
            b = await agent.call("what have we done so far?", ctx())
            texts.append((a.text, b.text))
    assert texts[0] == texts[1]
    assert all(t.startswith("[demo model] ") for t in texts[0])
    assert "not an LLM" in texts[0][0]
    assert "“hello there” → answered" in texts[0][1]


@pytest.mark.anyio
async def test_without_the_tool_it_says_so_instead_of_calling() -> None:
    async with config(tools=()).build() as agent:
        reply = await agent.call("count to 3", ctx())
    assert "offers no such tool" in reply.text
    assert not reply.tool_uses


@pytest.mark.anyio
async def test_stream_yields_chunks_that_add_up_to_the_reply() -> None:
    model = DemoModel(delay=0, chunk_words=1)
    request = ModelRequest([Msg.user("tell me something")])
    items = [item async for item in model.stream(request, RuntimeContext())]
    deltas, final = items[:-1], items[-1]
    assert isinstance(final, ModelResponse)
    assert len(deltas) > 5 and all(isinstance(d, ModelDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == final.message.text


@pytest.mark.anyio
async def test_streamed_deltas_reach_run_events() -> None:
    async with config().build() as agent:
        run = agent.prepare_call("hi", ctx())
        seen: list[str] = []

        async def watch() -> None:
            async for event in run.events():
                if event.kind == "model_delta":
                    seen.append(event.data["text"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            reply = await run.result()
    assert "".join(seen) == reply.text


@pytest.mark.anyio
async def test_interrupt_mid_slow_count_records_an_interrupted_result() -> None:
    async with config().build() as agent:
        run = agent.prepare_call("count to 50 slowly", ctx()).start()
        async for event in run.events():
            if event.kind == "tool_called":
                await anyio.sleep(0.1)
                assert agent.interrupt("ann", "s1", "stop, please")
        reply = await run.result()
        state = await agent.get_agent_state("ann", "s1")
    assert reply.metadata["generate_reason"] == "INTERRUPTED"
    results = [r for m in state.context for r in m.tool_results]
    uses = [u for m in state.context for u in m.tool_uses]
    assert [r.id for r in results] == [u.id for u in uses]
    assert results[0].state == "interrupted"
    assert any(m.role == "user" and m.text == "stop, please" for m in state.context)


@pytest.mark.anyio
async def test_tools_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match="between 1 and 100"):
        await slow_count(0)
    with pytest.raises(ValueError, match="empty"):
        get_weather("   ")
    assert await slow_count(3, 0) == "counted 1, 2, 3"


def test_bad_options_are_model_errors() -> None:
    with pytest.raises(ModelError, match="unknown option"):
        DemoModel(temperature=1)
    with pytest.raises(ModelError, match="delay"):
        DemoModel(delay="fast")
    with pytest.raises(ModelError, match="chunk_words"):
        DemoModel(chunk_words=0)


def test_registered_as_demo_and_adds_no_tools() -> None:
    pm = create_plugin_manager([demo_plugin], autoload=False)
    assert not pm.hook.hookagent_register_tools.get_hookimpls()
    names = [i.plugin_name for i in pm.hook.hookagent_register_models.get_hookimpls()]
    assert len(names) == 1
    kernel = AgentConfig(
        model="demo",
        plugins=[demo_plugin],
        autoload_plugins=False,
        state_store=InMemoryAgentStateStore(),
    ).kernel
    assert isinstance(kernel.model, DemoModel)
    assert kernel.tools == {}


def test_tool_spec_names_drive_the_choice() -> None:
    from hookagent_model_demo.rules import decide

    tools = ["get_weather"]
    plan = decide([Msg.user("weather?")], tools)
    assert (plan.tool, plan.arguments) == ("get_weather", {"city": "Paris"})
    assert decide([Msg.user("I like Tokyo")], tools).arguments == {"city": "Tokyo"}
    assert decide([Msg.user("hello")], tools).tool is None


@pytest.mark.anyio
async def test_stream_off_answers_in_one_piece() -> None:
    weather = ToolSpec("get_weather", "Current weather", {"type": "object"})
    request = ModelRequest([Msg.user("What is the weather in Paris?")], tools=[weather])
    streamed = [i async for i in DemoModel(delay=0, chunk_words=1).stream(request, ctx())]
    whole = [i async for i in DemoModel(delay=0.5, stream=False).stream(request, ctx())]
    assert len(streamed) > 2  # word by word
    assert [type(i) for i in whole] == [ModelDelta, ModelResponse]
    assert isinstance(whole[1], ModelResponse) and isinstance(streamed[-1], ModelResponse)
    assert whole[0] == ModelDelta(text=whole[1].message.text)
    assert whole[1].message.tool_uses[0].name == streamed[-1].message.tool_uses[0].name


@pytest.mark.parametrize("value", ["false", 0, None])
def test_stream_must_be_a_bool(value: object) -> None:
    with pytest.raises(ModelError, match="stream must be True or False"):
        DemoModel(stream=value)  # type: ignore[arg-type]
