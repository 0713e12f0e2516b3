"""The retry example of docs/hooks.md (examples/retry_model.py): retries, streaming, interrupt."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hookagent import (
    AgentConfig,
    InMemoryAgentStateStore,
    ModelAuthError,
    ModelUnavailable,
    Msg,
    RunEvent,
    RuntimeContext,
    hookimpl,
)
from hookagent.testing import ScriptedModel

pytestmark = pytest.mark.anyio
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "retry_model.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("retry_model_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Events:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.on_delta: Any = None

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.events.append(event)
        if event.kind == "model_delta" and self.on_delta is not None:
            self.on_delta(event)


def failing_then(steps: list[Any]) -> ScriptedModel:
    return ScriptedModel(steps, stream=True, chunk=4)


async def test_retries_a_failing_provider_and_keeps_streaming() -> None:
    retry = load_example().RetryModelCalls(attempts=3, base_delay=0.001)
    events = Events()
    model = failing_then(
        [ModelUnavailable("503"), ModelUnavailable("503 again"), "streamed after two retries"]
    )
    config = AgentConfig(
        model=model,
        plugins=[retry, events],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    async with config.build() as agent:
        reply = await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))
    assert reply.text == "streamed after two retries" and retry.retries == 2
    deltas = "".join(e.data["text"] for e in events.events if e.kind == "model_delta")
    assert deltas == "streamed after two retries"  # the third attempt streamed
    assert len(model.requests) == 3


async def test_gives_up_after_the_last_attempt_and_never_retries_other_errors() -> None:
    module = load_example()
    for error, expected_requests in ((ModelUnavailable("down"), 2), (ModelAuthError("401"), 1)):
        retry = module.RetryModelCalls(attempts=2, base_delay=0.001)
        model = ScriptedModel(default=lambda r, e=error: (_ for _ in ()).throw(e))
        config = AgentConfig(
            model=model,
            plugins=[retry],
            state_store=InMemoryAgentStateStore(),
            autoload_plugins=False,
        )
        with pytest.raises(type(error)):
            await config.build().call("hi", RuntimeContext(user_id="u", session_id="s"))
        assert len(model.requests) == expected_requests


async def test_an_interrupt_during_the_retried_stream_stops_the_run() -> None:
    retry = load_example().RetryModelCalls(attempts=5, base_delay=0.001)
    events = Events()
    model = ScriptedModel(
        [ModelUnavailable("503"), "a long answer " * 50], stream=True, chunk=4, delay=0.005
    )
    config = AgentConfig(
        model=model,
        plugins=[retry, events],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    )
    agent = config.build()
    events.on_delta = lambda event: agent.interrupt("u", "s", "stop")
    reply = await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))
    assert reply.metadata["generate_reason"] == "INTERRUPTED"
    assert retry.retries == 1 and len(model.requests) == 2  # no retry after the interrupt
    assert sum(e.kind == "model_delta" for e in events.events) == 1
    kinds = [e.kind for e in events.events]
    assert kinds[-1] == "run_interrupted" and kinds.count("run_interrupted") == 1
    state = await agent.get_agent_state("u", "s")
    assert [m.role for m in state.context] == ["user", "user", "assistant"]
    assert state.context[1] == Msg.user(
        "stop", id=state.context[1].id, timestamp=state.context[1].timestamp
    )


async def test_an_interrupt_during_the_back_off_stops_the_run() -> None:
    retry = load_example().RetryModelCalls(attempts=3, base_delay=30.0)  # a long sleep
    model = ScriptedModel([ModelUnavailable("503"), "never asked"])
    config = AgentConfig(
        model=model, plugins=[retry], state_store=InMemoryAgentStateStore(), autoload_plugins=False
    )
    agent = config.build()
    out: list[Msg] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                out.append(await agent.call("hi", RuntimeContext(user_id="u", session_id="s")))

            tg.start_soon(call)
            while retry.retries == 0:
                await anyio.sleep(0.001)
            assert agent.interrupt("u", "s")
    assert out[0].metadata["generate_reason"] == "INTERRUPTED" and len(model.requests) == 1
