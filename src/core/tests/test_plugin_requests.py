"""A plugin's own request through the model chain (a compaction summary): it streams like
any other, but its deltas are not the reply and are not emitted as ``model_delta``."""

from __future__ import annotations

import pytest
from hookagent import (
    REASONING,
    SUMMARY,
    AgentConfig,
    InMemoryAgentStateStore,
    Middleware,
    ModelRequest,
    Msg,
    RuntimeContext,
    hookimpl,
)
from hookagent.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Summarises:
    """Before each reasoning request, one summary request through the rest of the chain."""

    def __init__(self) -> None:
        self.summaries: list[str] = []

    @hookimpl
    def hookagent_wrap_model_call(self) -> Middleware:
        async def middleware(request: ModelRequest, ctx: RuntimeContext, call_next):  # type: ignore[no-untyped-def]
            if request.purpose == REASONING:
                ask = request.evolve(messages=[Msg.user("summarise")], purpose=SUMMARY)
                self.summaries.append((await call_next(ask)).message.text)
            return await call_next(request)

        return Middleware(middleware, order=200)


async def test_a_summary_request_streams_without_model_delta_events() -> None:
    model = ScriptedModel(["the summary text", "the reply text"], stream=True, chunk=4)
    plugin = Summarises()
    config = AgentConfig(
        model=model, plugins=[plugin], state_store=InMemoryAgentStateStore(), autoload_plugins=False
    )
    async with config.build() as agent:
        run = agent.prepare_call("hi", RuntimeContext(session_id="s")).start()
        events = [e async for e in run.events()]
        reply = await run.result()
    assert plugin.summaries == ["the summary text"] and reply.text == "the reply text"
    assert [r.purpose for r in model.requests] == [SUMMARY, REASONING]
    deltas = "".join(e.data["text"] for e in events if e.kind == "model_delta")
    assert deltas == "the reply text"
