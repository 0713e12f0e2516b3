"""The section cache: bounded, keyed by workspace and settings, never stale."""

from __future__ import annotations

import pytest
from hookagent import WorkspaceFileNotFound, estimate_tokens
from hookagent_memory import MemorySettings
from hookagent_memory.section import SectionCache


class DictWorkspace:
    def __init__(self, url: str) -> None:
        self.url, self.shared = url, False
        self.files: dict[str, str] = {}

    async def read_text(self, path: str) -> str:
        if path not in self.files:
            raise WorkspaceFileNotFound(path)
        return self.files[path]


pytestmark = pytest.mark.anyio


async def test_the_cache_is_bounded_and_keyed_by_settings() -> None:
    cache = SectionCache(size=2)
    settings = MemorySettings()
    spaces = []
    for i in range(3):
        ws = DictWorkspace(f"memory://ws-{i}")
        ws.files["AGENTS.md"] = f"rules {i}"
        spaces.append(ws)
        assert f"rules {i}" in await cache.section(ws, settings, estimate_tokens)
    assert list(cache._entries) == ["memory://ws-1", "memory://ws-2"]
    renders = cache.renders
    await cache.section(spaces[2], settings, estimate_tokens)
    assert cache.renders == renders  # unchanged: served from the cache
    other = MemorySettings(budget_tokens=100)
    await cache.section(spaces[2], other, estimate_tokens)
    assert cache.renders == renders + 1  # other settings: rendered for them
    await cache.section(spaces[2], other, lambda text: len(text))
    assert cache.renders == renders + 2  # another counter too
