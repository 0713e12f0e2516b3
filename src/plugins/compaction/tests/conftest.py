from __future__ import annotations

from typing import Any

import pytest
from hookagent import (
    AgentConfig,
    InMemoryAgentStateStore,
    RunEvent,
    RuntimeContext,
    WorkspaceFileNotFound,
    WorkspacePathError,
    hookimpl,
)
from hookagent_compaction import plugin as compaction_plugin


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Events:
    """Records the run events of the configuration it is in."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.events.append(event)

    def kinds(self, prefix: str = "compaction_") -> list[str]:
        return [e.kind for e in self.events if e.kind.startswith(prefix)]

    def data(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.kind == kind]


class DictWorkspace:
    """A test-local workspace: files in a dict, the bounds a real one enforces."""

    shared = False

    def __init__(self, url: str = "memory://ws") -> None:
        self.url = url
        self.files: dict[str, str] = {}
        self.writes = 0

    def _check(self, path: str) -> str:
        if not path or path.startswith("/") or ".." in path.split("/"):
            raise WorkspacePathError(f"bad path {path!r}")
        return path

    async def read_text(self, path: str) -> str:
        try:
            return self.files[self._check(path)]
        except KeyError:
            raise WorkspaceFileNotFound(path) from None

    async def write_text(self, path: str, text: str) -> None:
        self.writes += 1
        self.files[self._check(path)] = text

    async def append_text(self, path: str, text: str) -> None:
        self.files[self._check(path)] = self.files.get(path, "") + text

    async def exists(self, path: str) -> bool:
        return self._check(path) in self.files

    async def list(self, path: str = "") -> list[str]:
        return sorted(p for p in self.files if p.startswith(path))

    async def remove(self, path: str) -> None:
        self.files.pop(self._check(path), None)

    async def size(self, path: str) -> int:
        return len(await self.read_text(path))


class Provides:
    """The workspace plugin stand-in: one DictWorkspace per user."""

    def __init__(self) -> None:
        self.roots: dict[str, DictWorkspace] = {}

    @hookimpl
    def hookagent_workspace(self, ctx: RuntimeContext) -> DictWorkspace:
        return self.roots.setdefault(ctx.user_id, DictWorkspace(f"memory://ws/{ctx.user_id}"))


def make(model: Any, *plugins: object, options: dict[str, Any] | None = None, **kw: Any):
    kw.setdefault("state_store", InMemoryAgentStateStore())
    return AgentConfig(
        model=model,
        plugins=[compaction_plugin, *plugins],
        autoload_plugins=False,
        plugin_options={"compaction": options or {}},
        **kw,
    )


def ctx(user: str = "ann", session: str = "s1") -> RuntimeContext:
    return RuntimeContext(user_id=user, session_id=session)
