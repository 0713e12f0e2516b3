"""``open_store`` / ``open_store_sync``: a store from a URL, outside any agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookagent import (
    AgentConfig,
    AgentError,
    AgentState,
    HookContractError,
    InMemoryAgentStateStore,
    Msg,
    StoreConfigurationError,
    create_plugin_manager,
    hookimpl,
    open_store,
    open_store_sync,
)
from hookagent.store.open import url_scheme
from hookagent.testing import ScriptedModel


class TrackedStore(InMemoryAgentStateStore):
    def __init__(self, url: str, **options: Any) -> None:
        super().__init__()
        self.url, self.options, self.closed = url, options, False

    async def aclose(self) -> None:
        self.closed = True
        await super().aclose()


class StorePlugin:
    """``mem://`` opens synchronously, ``slow://`` through an awaitable (as the SQL store)."""

    def __init__(self) -> None:
        self.opened: list[TrackedStore] = []

    def _make(self, url: str, **options: Any) -> TrackedStore:
        store = TrackedStore(url, **options)
        self.opened.append(store)
        return store

    @hookimpl
    def hookagent_register_state_stores(self, register: Any) -> None:
        async def opening(url: str, **options: Any) -> TrackedStore:
            return self._make(url, **options)

        register("mem", self._make)
        register("slow", opening)
        register("bogus", lambda url, **options: {"not": "a store"})


@pytest.fixture
def plugin() -> StorePlugin:
    return StorePlugin()


@pytest.fixture
def pm(plugin: StorePlugin) -> Any:
    return create_plugin_manager([plugin], autoload=False)


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["mem://a", "slow://b"])
async def test_open_store_opens_the_registered_scheme_with_its_options(
    pm: Any, plugin: StorePlugin, url: str
) -> None:
    store = await open_store(url, plugin_manager=pm, ttl=5)
    assert plugin.opened == [store] and isinstance(store, TrackedStore)
    assert store.url == url and store.options == {"ttl": 5}
    await store.aclose()


@pytest.mark.anyio
async def test_an_unknown_scheme_names_the_registered_ones(pm: Any) -> None:
    with pytest.raises(StoreConfigurationError, match=r"'nope'.*registered: bogus, mem, slow"):
        await open_store("nope://x", plugin_manager=pm)
    empty = create_plugin_manager(autoload=False)
    with pytest.raises(StoreConfigurationError, match="none \\(install a store plugin\\)"):
        await open_store("mem://x", plugin_manager=empty)


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["", "   ", None, 3, b"mem://x"])
async def test_a_url_that_is_not_a_string_is_refused(pm: Any, url: Any) -> None:
    with pytest.raises(StoreConfigurationError, match="non-empty string"):
        await open_store(url, plugin_manager=pm)


@pytest.mark.anyio
async def test_a_factory_returning_no_store_names_its_plugin(pm: Any) -> None:
    with pytest.raises(HookContractError, match=r"'bogus' URLs returned dict"):
        await open_store("bogus://x", plugin_manager=pm)


def test_the_url_rules_are_the_agent_configs() -> None:
    assert url_scheme("redis://h:1/0") == "redis"
    assert url_scheme("/var/lib/app") == "file"
    assert url_scheme("relative/dir") == "file"
    made: list[str] = []

    class Plugin:
        @hookimpl
        def hookagent_register_state_stores(self, register: Any) -> None:
            register("file", lambda url, **o: made.append(url) or InMemoryAgentStateStore())

    AgentConfig(state_store="some/dir", plugins=[Plugin()], autoload_plugins=False).build()
    assert made == ["some/dir"]  # the kernel picks ``file`` for a bare path too


@pytest.mark.anyio
async def test_open_store_uses_the_installed_entry_points(tmp_path: Path) -> None:
    """No plugin manager given: the installed store plugins (here the JSON-file one) serve."""
    store = await open_store(f"file://{tmp_path}")
    try:
        state = AgentState(session_id="s1", user_id="alice")
        state.context.append(Msg.user("hi"))
        assert await store.save_if_version("alice", "s1", state, 0) == 1
    finally:
        await store.aclose()
    config = AgentConfig(model=ScriptedModel(default="ok"), state_store=f"file://{tmp_path}")
    loaded = await config.build().get_agent_state("alice", "s1")
    assert [m.text for m in loaded.context] == ["hi"]
    await config.aclose()


def test_open_store_sync_runs_every_method_and_closes(pm: Any, plugin: StorePlugin) -> None:
    with open_store_sync("slow://x", plugin_manager=pm) as store:
        state = AgentState(session_id="s1", user_id="alice")
        assert store.get("alice", "s1") is None
        assert store.save_if_version("alice", "s1", state, 0) == 1
        assert store.get_versioned("alice", "s1").version == 1
        assert store.exists("alice", "s1") and not store.exists("bob", "s1")
        assert store.list_session_ids("alice", limit=5).session_ids == ("s1",)
        assert store.delete("alice", "s1") and not store.exists("alice", "s1")
        assert not plugin.opened[0].closed
    assert plugin.opened[0].closed


def test_open_store_sync_closes_the_store_when_the_block_raises(
    pm: Any, plugin: StorePlugin
) -> None:
    with pytest.raises(RuntimeError, match="boom"), open_store_sync("mem://x", plugin_manager=pm):
        raise RuntimeError("boom")
    assert plugin.opened[0].closed


def test_open_store_sync_refuses_unknown_schemes(pm: Any) -> None:
    with (
        pytest.raises(StoreConfigurationError, match="registered: bogus, mem, slow"),
        open_store_sync("nope://x", plugin_manager=pm),
    ):
        pass


@pytest.mark.anyio
async def test_open_store_sync_inside_an_event_loop_says_to_await(pm: Any) -> None:
    with (
        pytest.raises(AgentError, match="await open_store"),
        open_store_sync("mem://x", plugin_manager=pm),
    ):
        pass
