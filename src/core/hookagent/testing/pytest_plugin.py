"""The ``hookagent`` pytest plugin (entry point ``pytest11``): fixtures for plugin authors.

* ``hookagent_pm``: a fresh plugin manager per test, entry-point autoload off.
* ``register_plugin(plugin)``: register a plugin for this test only (on ``hookagent_pm`` and on
  every configuration made by ``agent_config``).
* ``hook_recorder``: records every hook call made through ``hookagent_pm``.
* ``scripted_model``: a ``ScriptedModel`` to queue responses on.
* ``agent_config(**options)``: an ``AgentConfig`` with autoload off, an in-memory store, the
  scripted model and the registered plugins (options override); its hook calls are recorded too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..agent import AgentConfig
from ..plugins import HookagentPluginManager, create_plugin_manager
from ..store.memory import InMemoryAgentStateStore
from .recorder import HookRecorder
from .scripted import ScriptedModel


@pytest.fixture
def hookagent_pm() -> HookagentPluginManager:
    return create_plugin_manager(autoload=False, trace=False)


@pytest.fixture
def hookagent_plugins() -> list[object]:
    return []


@pytest.fixture
def register_plugin(
    hookagent_pm: HookagentPluginManager, hookagent_plugins: list[object]
) -> Iterator[Callable[[object], object]]:
    registered: list[object] = []

    def register(plugin: object) -> object:
        hookagent_pm.register(plugin)
        hookagent_pm.check_pending()
        hookagent_plugins.append(plugin)
        registered.append(plugin)
        return plugin

    yield register
    for plugin in registered:
        if hookagent_pm.is_registered(plugin):
            hookagent_pm.unregister(plugin)


@pytest.fixture
def hook_recorder(hookagent_pm: HookagentPluginManager) -> Iterator[HookRecorder]:
    recorder = HookRecorder(hookagent_pm)
    yield recorder
    recorder.close()


@pytest.fixture
def scripted_model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def agent_config(
    hookagent_pm: HookagentPluginManager, scripted_model: ScriptedModel, hook_recorder: HookRecorder
) -> Callable[..., AgentConfig]:
    """Configurations on ``hookagent_pm``: the recorder sees every hook call, registration too."""

    def make(**options: Any) -> AgentConfig:
        options.setdefault("model", scripted_model)
        options.setdefault("state_store", InMemoryAgentStateStore())
        options.setdefault("tool_groups", ("*",))
        options.setdefault("plugin_manager", hookagent_pm)
        return AgentConfig(**options)

    return make
