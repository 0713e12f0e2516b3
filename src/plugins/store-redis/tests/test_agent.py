"""End to end with the kernel's agent: a call in one agent, a second agent on a fresh store
instance (as another replica would be) continues the conversation."""

from __future__ import annotations

import pytest
from hookagent import AgentConfig, RuntimeContext
from hookagent.testing.scripted import ScriptedModel, tool_call
from hookagent_store_redis import RedisAgentStateStore, RedisSessionGate, connect
from hookagent_store_redis.testing import STANDALONE, ClusterInfo

pytestmark = pytest.mark.anyio


def lookup(key: int) -> str:
    """Look a key up."""
    return f"value-{key}"


async def _continue_on_a_fresh_instance(url: str, prefix: str) -> None:
    ctx = RuntimeContext(user_id="alice", session_id="chat-1")
    first = connect(url, prefix=prefix)
    model = ScriptedModel([tool_call("lookup", key=1), "the value is value-1"])
    config = AgentConfig(
        name="e2e", model=model, tools=[lookup], state_store=first, autoload_plugins=False,
        session_gate=RedisSessionGate(first),
    )  # fmt: skip
    async with config.build() as agent:
        reply = await agent.call("what is key 1?", ctx)
    assert reply.text == "the value is value-1"
    await first.aclose()

    second = connect(url, prefix=prefix)
    model2 = ScriptedModel(["you asked about key 1"])
    config2 = AgentConfig(
        name="e2e", model=model2, tools=[lookup], state_store=second, autoload_plugins=False,
        session_gate=RedisSessionGate(second),
    )  # fmt: skip
    async with config2.build() as agent:
        reply = await agent.call("what did I ask?", ctx)
    assert reply.text == "you asked about key 1"
    seen = [m.text for m in model2.requests[0].messages]
    assert "what is key 1?" in seen and "the value is value-1" in seen
    got = await second.get_versioned("alice", "chat-1")
    assert got.state is not None
    assert [m.role for m in got.state.context][-6:] == [
        "user", "assistant", "tool", "assistant", "user", "assistant"
    ]  # fmt: skip
    assert (await second.list_session_ids("alice")).session_ids == ("chat-1",)
    await second.aclose()


async def test_agent_continues_on_another_instance(standalone_store: RedisAgentStateStore) -> None:
    await _continue_on_a_fresh_instance(STANDALONE, standalone_store.prefix)


async def test_agent_continues_on_cluster(
    cluster_store: RedisAgentStateStore, redis_cluster: ClusterInfo
) -> None:
    await _continue_on_a_fresh_instance(redis_cluster.url, cluster_store.prefix)


async def test_agent_binds_the_store_by_url(standalone_store: RedisAgentStateStore) -> None:
    config = AgentConfig(
        name="by-url", model=ScriptedModel(["hi"]),
        state_store=f"{STANDALONE}?prefix={standalone_store.prefix}",
    )  # fmt: skip
    async with config.build() as agent:
        await agent.call("hello", RuntimeContext(user_id="bob", session_id="s"))
    got = await standalone_store.get_versioned("bob", "s")
    assert got.state is not None and [m.text for m in got.state.context][-2:] == ["hello", "hi"]
