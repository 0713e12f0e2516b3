"""``model_options={"stream": False}``: whole completions only, for servers whose streams
drop tool calls; the kernel's agent then runs the tool the server asked for."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import AgentConfig, RuntimeContext, hookimpl
from hookagent.messages import Msg
from hookagent.models import ModelRequest
from hookagent.store.memory import InMemoryAgentStateStore
from hookagent_model_openai import plugin as openai_plugin
from hookagent_model_openai.config import ModelConfigurationError, OpenAISettings
from hookagent_model_openai.provider import OpenAIChatModel
from hookagent_model_openai.testing import (
    fake_openai_server,
    text_reply,
    tool_call,
    tool_calls_unless_streamed,
)

pytestmark = pytest.mark.anyio


calls: list[str] = []


def get_weather(city: str) -> str:
    """Current weather for a city."""
    calls.append(city)
    return f"sunny in {city}"


class Deltas:
    def __init__(self) -> None:
        self.texts: list[str] = []

    @hookimpl
    def hookagent_on_run_event(self, event: Any) -> None:
        if event.kind == "model_delta":
            self.texts.append(event.data["text"])


async def ask(stream: bool | None, deltas: Deltas) -> tuple[str, list[Any]]:
    calls.clear()
    script = [
        tool_calls_unless_streamed(tool_call("get_weather", {"city": "Paris"})),
        text_reply("It is sunny in Paris."),
    ]
    options: dict[str, Any] = {"model": "mock-model"}
    if stream is not None:
        options["stream"] = stream
    with fake_openai_server(script) as srv:
        options["base_url"] = srv.base_url
        config = AgentConfig(
            model="openai",
            model_options=options,
            tools=[get_weather],
            plugins=[openai_plugin, deltas],
            state_store=InMemoryAgentStateStore(),
            autoload_plugins=False,
        )
        try:
            async with config.build() as agent:
                reply = await agent.call("Weather?", RuntimeContext(user_id="u", session_id="s"))
        finally:
            await config.aclose()
        return reply.text, [r.body for r in srv.requests]


async def test_with_stream_off_the_tool_call_of_a_whole_answer_runs() -> None:
    deltas = Deltas()
    text, bodies = await ask(False, deltas)
    assert calls == ["Paris"]
    assert text == "It is sunny in Paris."
    assert len(bodies) == 2 and all("stream" not in b and "stream_options" not in b for b in bodies)
    assert deltas.texts == ["It is sunny in Paris."]  # subscribers still see the text


async def test_streaming_against_that_server_loses_the_tool_call() -> None:
    """The control: the default (streaming) never sees the server's tool call."""
    text, bodies = await ask(None, Deltas())
    assert calls == []
    assert text == "I would call a tool."
    assert len(bodies) == 1 and bodies[0]["stream"] is True


async def test_stream_off_makes_stream_delegate_to_generate() -> None:
    with fake_openai_server([text_reply("whole")]) as srv:
        model = OpenAIChatModel.from_options(model="m", base_url=srv.base_url, stream=False)
        try:
            items = [i async for i in model.stream(ModelRequest([Msg.user("hi")]), None)]
        finally:
            await model.aclose()
    assert [type(i).__name__ for i in items] == ["ModelDelta", "ModelResponse"]
    assert items[1].message.text == "whole" and "stream" not in srv.requests[0].body


@pytest.mark.parametrize("value", ["false", 0, 1, "yes"])
def test_stream_must_be_a_bool(value: Any) -> None:
    with pytest.raises(ModelConfigurationError, match=r"option stream=.* must be True or False"):
        OpenAISettings.from_options(model="m", base_url="http://127.0.0.1:1/v1", stream=value)


@pytest.mark.parametrize(
    ("raw", "expected"), [("0", False), ("off", False), ("FALSE", False), ("yes", True)]
)
def test_stream_from_the_environment(monkeypatch: Any, raw: str, expected: bool) -> None:
    monkeypatch.setenv("HOOKAGENT_OPENAI_STREAM", raw)
    settings = OpenAISettings.from_options(model="m", base_url="http://127.0.0.1:1/v1")
    assert settings.stream is expected
    explicit = OpenAISettings.from_options(
        model="m", base_url="http://127.0.0.1:1/v1", stream=not expected
    )
    assert explicit.stream is (not expected)  # an explicit option wins


def test_a_bad_stream_variable_is_named(monkeypatch: Any) -> None:
    monkeypatch.setenv("HOOKAGENT_OPENAI_STREAM", "maybe")
    with pytest.raises(ModelConfigurationError, match="HOOKAGENT_OPENAI_STREAM='maybe'"):
        OpenAISettings.from_options(model="m", base_url="http://127.0.0.1:1/v1")


def test_stream_is_still_refused_as_a_request_parameter() -> None:
    from hookagent_model_openai.config import check_params

    with pytest.raises(ModelConfigurationError, match="'stream' is set by the provider"):
        check_params({"stream": False}, "request options")
