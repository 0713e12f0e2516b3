"""A whole ReAct turn through the kernel's agent, the provider and a loopback server."""

import pytest
from hookagent import AgentConfig, RuntimeContext, hookimpl
from hookagent.store.memory import InMemoryAgentStateStore
from hookagent_model_openai import plugin as openai_plugin
from hookagent_model_openai.testing import fake_openai_server, text_stream, tool_call_stream

pytestmark = pytest.mark.anyio


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C and sunny in {city}"


class Events:
    def __init__(self):
        self.events = []

    @hookimpl
    def hookagent_on_run_event(self, event):
        self.events.append(event)


async def test_react_turn_with_streaming_and_tool_call():
    script = [
        tool_call_stream(
            [("call_w1", "get_weather", ['{"city":', ' "Paris"}'])], text=["Let me check."]
        ),
        text_stream(["It is ", "18C and sunny ", "in Paris."]),
    ]
    events = Events()
    store = InMemoryAgentStateStore()
    with fake_openai_server(script) as srv:
        config = AgentConfig(
            name="weather",
            model="openai",
            model_options={"model": "test-model", "base_url": srv.base_url, "temperature": 0},
            tools=[get_weather],
            plugins=[openai_plugin, events],
            state_store=store,
            system_prompt="You answer weather questions.",
            autoload_plugins=False,
        )
        try:
            async with config.build() as agent:
                reply = await agent.call(
                    "Weather in Paris?", RuntimeContext(user_id="alice", session_id="s1")
                )
        finally:
            await config.aclose()
        assert config.kernel.model.closed  # the configuration closed the provider it built
        assert srv.attempts == 2

    assert reply.role == "assistant" and reply.text == "It is 18C and sunny in Paris."

    first, second = (r.body for r in srv.requests)
    assert first["stream"] is True and first["temperature"] == 0
    assert first["messages"][0] == {"role": "system", "content": "You answer weather questions."}
    assert first["messages"][-1] == {"role": "user", "content": "Weather in Paris?"}
    (tool,) = first["tools"]
    assert tool["function"]["name"] == "get_weather"
    assert tool["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assistant, result = second["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "call_w1"
    assert result == {
        "role": "tool",
        "tool_call_id": "call_w1",
        "content": "18C and sunny in Paris",
    }

    deltas = [e.data["text"] for e in events.events if e.kind == "model_delta"]
    assert "".join(deltas) == "Let me check.It is 18C and sunny in Paris."

    stored = (await store.get_versioned("alice", "s1")).state
    roles = [m.role for m in stored.context]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert stored.context[1].tool_uses[0].input == {"city": "Paris"}
