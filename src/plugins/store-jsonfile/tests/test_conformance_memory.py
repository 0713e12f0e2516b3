"""The same contract on fsspec filesystems: memory:// single-writer and multi-writer, and the
multi-writer (conditional-write) protocol on the local fsspec filesystem."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import fsspec
import pytest
from hookagent.testing import StoreConformance
from hookagent_store_jsonfile import FsspecJsonFileStore


async def _memory_store(writers: str) -> AsyncIterator[FsspecJsonFileStore]:
    store = FsspecJsonFileStore(f"memory://hookagent-test-{uuid.uuid4().hex}", writers=writers)
    yield store
    await store.aclose()
    fs = fsspec.filesystem("memory")
    if fs.exists(store.root):
        fs.rm(store.root, recursive=True)


class TestFsspecMemoryStore(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[FsspecJsonFileStore]:
        async for store in _memory_store("single"):
            yield store


class TestFsspecMemoryMultiWriter(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[FsspecJsonFileStore]:
        async for store in _memory_store("multi"):
            yield store


class TestFsspecLocalMultiWriter(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[FsspecJsonFileStore]:
        store = FsspecJsonFileStore(
            str(tmp_path / "root"), writers="multi", fs=fsspec.filesystem("file")
        )
        yield store
        await store.aclose()
