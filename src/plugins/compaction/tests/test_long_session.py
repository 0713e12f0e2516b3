"""A W1-shaped session (user, tool call, tool result, answer per call) under the defaults
with the demo summariser: every request stays under the trigger plus one call's messages,
the history stays bounded, and the chained demo digest keeps counting."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import ModelRequest, ModelResponse, Msg, TextBlock, ToolUseBlock
from hookagent_model_demo import DemoModel

from .conftest import Events, ctx, make

pytestmark = pytest.mark.anyio
CALLS = 150


class W1Model:
    name = "w1-scripted"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
        self.sizes.append(len(request.messages))
        last = request.messages[-1]
        if last.role == "user":
            n = int(last.text.split()[-1])
            return ModelResponse(Msg.assistant([ToolUseBlock(f"call_{n}", "lookup", {"key": n})]))
        return ModelResponse(Msg.assistant([TextBlock(f"answer: {last.tool_results[0].text}")]))


def lookup(key: int) -> str:
    """Look a key up."""
    return f"value of key {key} " + "v" * 170


async def test_requests_stay_bounded_over_a_long_session():
    model = W1Model()
    events = Events()
    config = make(model, events, options={"summary_model": DemoModel(delay=0)}, tools=[lookup])
    async with config.build() as agent:
        for n in range(1, CALLS + 1):
            await agent.call(f"look up key {n}", ctx())
        state = await agent.get_agent_state("ann", "s1")
    assert len(model.sizes) == 2 * CALLS
    assert max(model.sizes) < 50 + 4  # the trigger plus one call's messages
    finished = events.data("compaction_finished")
    assert finished and all(f["accepted"] for f in finished)
    assert all(f["after_messages"] <= 21 for f in finished)
    assert len(state.context) < 50 + 4
    summarised = sum(f["summarised"] for f in finished)
    assert f"Messages summarised so far: {summarised}." in (state.summary or "")
    assert state.context[0].text.endswith(state.summary or "")
