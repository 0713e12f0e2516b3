"""The durable effect on real stores: the compacted history is the slot's history (a rewrite),
a fresh process loads it as written, later calls append after it; and a suspended turn
around a compaction keeps its step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookagent import Approve, Msg, RuntimeContext, ask, hookimpl
from hookagent.codec import encode_msg
from hookagent.relay import Middleware
from hookagent.testing import ScriptedModel, tool_call
from hookagent_compaction.cut import SUMMARY_KEY, tool_ids
from hookagent_compaction.summary import SUMMARY_HEADER
from hookagent_store_jsonfile import plugin as jsonfile_plugin
from hookagent_store_sql import plugin as sql_plugin

from .conftest import ctx, make

pytestmark = pytest.mark.anyio


def store_url(kind: str, tmp_path: Path) -> str:
    if kind == "file":
        return f"file://{tmp_path / 'files'}"
    return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"


def paired(history: Any) -> bool:
    """Every tool_use has its result and the other way round."""
    uses = [b.id for m in history for b in m.tool_uses]
    results = [b.id for m in history for b in m.tool_results]
    return sorted(uses) == sorted(results)


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_the_compacted_history_is_rewritten_and_reloads_as_written(kind, tmp_path):
    def lookup(key: int) -> str:
        """Look a key up."""
        return f"value {key}"

    def script(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            return tool_call("lookup", key=int(last.text.split()[-1]))
        return f"key holds {last.tool_results[0].text}"

    def configured(trigger: int) -> Any:
        summariser = ScriptedModel(default="gist")
        options = {"trigger_messages": trigger, "keep_messages": 5, "summary_model": summariser}
        return make(
            ScriptedModel(default=script),
            jsonfile_plugin,
            sql_plugin,
            options=options,
            tools=[lookup],
            state_store=store_url(kind, tmp_path),
        )

    config = configured(12)
    async with config.build() as agent:
        for n in range(4):  # 16 messages: one compaction at the 4th call's first request
            await agent.call(f"look up {n}", ctx())
        written = await agent.get_agent_state("ann", "s1")
    await config.aclose()
    fresh = configured(50)  # a new process's view of the slot (under its trigger)
    async with fresh.build() as agent:
        loaded = await agent.get_agent_state("ann", "s1")
        assert [encode_msg(m) for m in loaded.context] == [encode_msg(m) for m in written.context]
        assert loaded.summary == "gist" and SUMMARY_KEY in loaded.context[0].metadata
        assert sum(SUMMARY_KEY in m.metadata for m in loaded.context) == 1
        assert paired(loaded.context)
        await agent.call("look up 9", ctx())  # an append after the rewrite
        after = await agent.get_agent_state("ann", "s1")
    await fresh.aclose()
    assert [encode_msg(m) for m in after.context[: len(loaded.context)]] == [
        encode_msg(m) for m in loaded.context
    ]
    assert [m.text for m in after.context[-1:]] == ["key holds value 9"]


class AsksForDeploy:
    @hookimpl
    def hookagent_wrap_tool_call(self) -> Middleware:
        async def middleware(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
            if call.use.name == "deploy" and not call.approved:
                return ask(call, "deploy to production?")
            return await call_next(call)

        return Middleware(middleware, order=200)


async def test_a_suspension_after_a_compaction_keeps_its_step_and_resumes():
    def deploy() -> str:
        """Deploy."""
        return "deployed"

    model = ScriptedModel([tool_call("deploy"), "all done"])
    summariser = ScriptedModel(default="gist")
    options = {"trigger_messages": 8, "keep_messages": 3, "summary_model": summariser}
    config = make(model, AsksForDeploy(), options=options, tools=[deploy])
    store = await config.kernel.store()
    async with config.build() as agent:
        state = await agent.get_agent_state("ann", "s1")
        state.context.extend(Msg.user(f"old {i}") for i in range(10))
        await store.save_if_version("ann", "s1", state, 0)
        reply = await agent.call("deploy it", ctx())
        assert reply.metadata["generate_reason"] == "SUSPENDED"
        suspended = await agent.get_agent_state("ann", "s1")
        # compacted (the summary at the head) and the suspended step is still the tail
        assert suspended.context[0].text == f"{SUMMARY_HEADER}\ngist"
        step = suspended.context[-1]
        assert step.id == suspended.turn_context.step_id and step.tool_uses
        (pending,) = await agent.pending_interactions("ann", "s1")
        reply = await agent.call(
            ctx=RuntimeContext(user_id="ann", session_id="s1"),
            answers=[Approve(pending.tool_use_id)],
        )
        done = await agent.get_agent_state("ann", "s1")
    assert reply.text == "all done" and len(summariser.requests) == 1
    assert paired(done.context) and not done.turn_context.suspended
    assert [t for m in done.context for t in tool_ids(m)] == [pending.tool_use_id] * 2
