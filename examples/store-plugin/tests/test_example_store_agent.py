"""End to end: an agent configured with ``state_store="example-sqlite:///..."``."""

from __future__ import annotations

import importlib.metadata as md

import pytest
from hookagent import AgentConfig, RuntimeContext, create_plugin_manager
from hookagent.registry import collect_stores
from hookagent_example_store import ExampleSQLiteStore
from hookagent_example_store import plugin as example_plugin

pytestmark = pytest.mark.anyio


def texts(messages) -> list[str]:
    return [m.text for m in messages]


async def test_a_second_agent_continues_the_conversation(
    tmp_path, scripted_model, monkeypatch
) -> None:
    monkeypatch.delenv("HOOKAGENT_BLOCKED_PLUGINS", raising=False)
    url = f"example-sqlite://{tmp_path}/agent.db"
    ctx = RuntimeContext(user_id="alice", session_id="trip")
    scripted_model.queue("Lisbon is sunny.", "You asked about Lisbon.")

    # entry-point autoload on: the URL scheme is served by the installed example-store plugin
    first = AgentConfig(name="travel", model=scripted_model, state_store=url, autoload_plugins=True)
    async with first.build() as agent:
        assert (await agent.call("Weather in Lisbon?", ctx)).text == "Lisbon is sunny."
    assert isinstance(await first.kernel.store(), ExampleSQLiteStore)
    await first.aclose()  # the configuration opened the store, so it closes it

    # a fresh configuration (another process, a restart): a new store instance on the file
    second = AgentConfig(
        name="travel", model=scripted_model, state_store=url, autoload_plugins=True
    )
    async with second.build() as agent:
        ctx2 = RuntimeContext(user_id="alice", session_id="trip")
        reply = await agent.call("What did I ask?", ctx2)
        assert reply.text == "You asked about Lisbon."
        state = await agent.get_agent_state("alice", "trip")
        other_user = await agent.get_agent_state("bob", "trip")
    await second.aclose()
    assert texts(scripted_model.requests[1].messages) == [
        "Weather in Lisbon?",
        "Lisbon is sunny.",
        "What did I ask?",
    ]
    assert texts(state.context) == [*texts(scripted_model.requests[1].messages), reply.text]
    assert list(other_user.context) == []


async def test_with_the_pytest_fixtures(tmp_path, register_plugin, agent_config, scripted_model):
    register_plugin(example_plugin)
    url = f"example-sqlite://{tmp_path}/agent.db"
    scripted_model.queue("one", "two")
    for text in ("first", "second"):
        config = agent_config(state_store=url, state_store_options={"cache_slots": 0})
        async with config.build() as agent:
            await agent.call(text, RuntimeContext(user_id="u", session_id="s"))
        await config.aclose()
    assert texts(scripted_model.requests[1].messages) == ["first", "one", "second"]


def test_entry_point_is_declared_and_loads(monkeypatch) -> None:
    monkeypatch.delenv("HOOKAGENT_BLOCKED_PLUGINS", raising=False)
    (ep,) = [e for e in md.entry_points(group="hookagent") if e.name == "example-store"]
    assert ep.value == "hookagent_example_store.plugin"
    assert ep.dist is not None and ep.dist.name == "hookagent-example-store"
    pm = create_plugin_manager(autoload=True)
    assert pm.get_plugin("example-store") is example_plugin
    schemes = collect_stores(pm)  # every store plugin's register(scheme, factory, locality=)
    assert schemes["example-sqlite"][0] is example_plugin.open_store
