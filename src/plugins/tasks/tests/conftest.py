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


REDIS = "redis://127.0.0.1:6379/0"
POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
STORES = ("file", "redis", "postgresql")


def _drop_redis(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


async def _drop_postgres(prefix: str) -> None:
    import asyncpg

    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/test")
    try:
        await conn.execute(f'DROP VIEW IF EXISTS "{prefix}message_rows"')
        for suffix in ("chunks", "messages", "slots", "fences", "schema_migrations"):
            await conn.execute(f'DROP TABLE IF EXISTS "{prefix}{suffix}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """A fresh, real store of each kind: JSON files, Redis, PostgreSQL (shared servers on
    loopback, a unique prefix per test, removed afterwards)."""
    import uuid

    import anyio

    tag = uuid.uuid4().hex[:12]
    if request.param == "file":
        yield f"file://{tmp_path / 'state'}"
    elif request.param == "redis":
        prefix = f"hkt-tasks-{tag}"
        yield f"{REDIS}?prefix={prefix}"
        _drop_redis(prefix)
    else:
        prefix = f"tasks{tag}_"
        yield f"{POSTGRES}?table_prefix={prefix}"
        anyio.run(_drop_postgres, prefix)
