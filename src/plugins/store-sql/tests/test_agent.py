"""End to end with the kernel's agent: a call in one agent, a second agent on a fresh store
instance (bound by URL, as another replica would be) continues the conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookagent import AgentConfig, RuntimeContext
from hookagent.testing.scripted import ScriptedModel, tool_call
from hookagent_store_sql import SQLAgentStateStore, TableNames
from sqlenv import DIALECTS, drop_tables, unique_name, url_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def lookup(key: int) -> str:
    """Look a key up."""
    return f"value-{key}"


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_agent_continues_on_another_instance(dialect: str, tmp_path: Path) -> None:
    url = url_for(dialect, tmp_path)
    names = TableNames(unique_name("e2e"))
    ctx = RuntimeContext(user_id="alice", session_id="chat-1")
    try:
        first = SQLAgentStateStore(url, table_prefix=names.prefix)
        config = AgentConfig(
            name="e2e", model=ScriptedModel([tool_call("lookup", key=1), "the value is value-1"]),
            tools=[lookup], state_store=first, autoload_plugins=False,
        )  # fmt: skip
        async with config.build() as agent:
            reply = await agent.call("what is key 1?", ctx)
        assert reply.text == "the value is value-1"
        await config.aclose()
        await first.aclose()

        model2 = ScriptedModel(["you asked about key 1"])
        sep = "&" if "?" in url else "?"
        config2 = AgentConfig(
            name="e2e", model=model2, tools=[lookup],
            state_store=f"{url}{sep}table_prefix={names.prefix}",  # bound through the plugin
        )  # fmt: skip
        async with config2.build() as agent:
            reply = await agent.call("what did I ask?", ctx)
        assert reply.text == "you asked about key 1"
        seen = [m.text for m in model2.requests[0].messages]
        assert "what is key 1?" in seen and "the value is value-1" in seen
        store = await config2.kernel.store()
        assert isinstance(store, SQLAgentStateStore)
        got = await store.get_versioned("alice", "chat-1")
        assert got.state is not None
        assert [m.role for m in got.state.context][-6:] == [
            "user", "assistant", "tool", "assistant", "user", "assistant"
        ]  # fmt: skip
        assert (await store.list_session_ids("alice")).session_ids == ("chat-1",)
        await config2.aclose()
    finally:
        await drop_tables(url, names)
