from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hookagent_tasks.plugin as tasks_plugin
import pytest
from hookagent import AgentConfig, InMemoryAgentStateStore, RunEvent, hookimpl
from hookagent.testing import ScriptedModel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Events:
    """Collects every run event (a plugin observing ``hookagent_on_run_event``)."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.kind == kind]


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def make_config(events: Events) -> Callable[..., AgentConfig]:
    """A configuration with the tasks plugin, its tool group, a scripted model, memory store."""

    def make(model: ScriptedModel | None = None, **options: Any) -> AgentConfig:
        plugins = [tasks_plugin, events, *options.pop("plugins", ())]
        options.setdefault("state_store", InMemoryAgentStateStore())
        options.setdefault("tool_groups", ["tasks"])
        return AgentConfig(
            model=model or ScriptedModel(default="ok"),
            plugins=plugins,
            autoload_plugins=False,
            **options,
        )

    return make
