"""The same contract on fsspec's memory:// filesystem (single-writer mode)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import fsspec
import pytest
from hookagent.testing import StoreConformance
from hookagent_store_jsonfile import FsspecJsonFileStore


class TestFsspecMemoryStore(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[FsspecJsonFileStore]:
        root = f"memory://hookagent-test-{uuid.uuid4().hex}"
        store = FsspecJsonFileStore(root)
        yield store
        await store.aclose()
        fs = fsspec.filesystem("memory")
        if fs.exists(store.root):
            fs.rm(store.root, recursive=True)
