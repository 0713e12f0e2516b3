"""The same contract on fsspec filesystems: memory:// single-writer and multi-writer, and the
multi-writer (conditional-write) protocol on the local fsspec filesystem.

Both optional hooks are given: a second handle is another ``FsspecJsonFileStore`` on the same
root (its own history cache), and a planted state is the objects a rewrite leaves, in the
single-writer layout (one segment and ``head``) or the multi-writer one (one segment and the
head object ``v<version>``).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hookagent.messages import Msg
from hookagent.testing import StoreConformance, full_state
from hookagent.testing.conformance_hooks import split_document
from hookagent_store_jsonfile import FsspecJsonFileStore
from hookagent_store_jsonfile.layout import HEAD, id_parts, slot_parts
from hookagent_store_jsonfile.records import Head, encode_head_file, frame
from hookagent_store_jsonfile.remotecas import BUCKET, encode_cas_head


def plant_fsspec(
    store: FsspecJsonFileStore, user: str, session: str, key: str, document: bytes, version: int
) -> None:
    """Replace the key's objects with what a rewrite at ``version`` writes for ``document``."""
    head_state, messages = split_document(document)
    fs: Any = store.fs
    kpath = "/".join([store.root, *slot_parts(user, session), *id_parts(key)])
    if fs.exists(kpath):
        fs.rm(kpath, recursive=True)
    gen = secrets.token_hex(8)
    if store.writers == "multi":  # internal version == version (base 0), no fence recorded
        seg = f"{0:06d}-{secrets.token_hex(8)}"
        meta = {"base": 0, "gen": gen, "segs": [seg], "count": len(messages)}
        meta |= {"epoch": 0, "deleted": False}
        bucket = f"{kpath}/b{version // BUCKET:010d}"
        fs.makedirs(f"{kpath}/g{gen}", exist_ok=True)
        fs.makedirs(bucket, exist_ok=True)
        fs.pipe_file(f"{kpath}/g{gen}/{seg}", frame(messages))
        fs.pipe_file(f"{bucket}/v{version:016d}", encode_cas_head(meta, head_state))
    else:
        fs.makedirs(f"{kpath}/g{gen}", exist_ok=True)
        fs.pipe_file(f"{kpath}/g{gen}/{0:08d}", frame(messages))
        head = Head(version, gen, len(messages), 1, head_state)
        fs.pipe_file(f"{kpath}/{HEAD}", encode_head_file(head))


class FsspecHooks(StoreConformance):
    """``open_handle`` and ``plant_state`` for every fsspec layout."""

    async def open_handle(self, store: FsspecJsonFileStore) -> FsspecJsonFileStore:  # type: ignore[override]
        if store.url.startswith("memory://"):
            return FsspecJsonFileStore(store.url, writers=store.writers)
        return FsspecJsonFileStore(store.root, writers=store.writers, fs=fsspec.filesystem("file"))

    async def plant_state(  # type: ignore[override]
        self,
        store: FsspecJsonFileStore,
        user_id: str,
        session_id: str,
        key: str,
        document: bytes,
        version: int,
    ) -> None:
        plant_fsspec(store, user_id, session_id, key, document, version)

    async def test_a_planted_state_loads_as_saved(self, store: FsspecJsonFileStore) -> None:
        """The hook itself: what it plants is what a save at that version would leave."""
        state = full_state("u", "s")
        await self.plant_state(store, "u", "s", "agent_state", state.to_json().encode(), 5)
        async with self.handles(store, 1) as (other,):
            for handle in (store, other):
                got = await handle.get_versioned("u", "s")
                assert got.version == 5 and got.state is not None
                assert got.state.to_json() == state.to_json()
            assert got.state is not None
            got.state.context.append(Msg.user("next"))
            assert await other.save_if_version("u", "s", got.state, 5) == 6
            assert len((await store.get_versioned("u", "s")).state.context) == 7  # type: ignore[union-attr]


async def _memory_store(writers: str) -> AsyncIterator[FsspecJsonFileStore]:
    store = FsspecJsonFileStore(f"memory://hookagent-test-{uuid.uuid4().hex}", writers=writers)
    yield store
    await store.aclose()
    fs = fsspec.filesystem("memory")
    if fs.exists(store.root):
        fs.rm(store.root, recursive=True)


class TestFsspecMemoryStore(FsspecHooks):
    @pytest.fixture
    async def store(self) -> AsyncIterator[FsspecJsonFileStore]:
        async for store in _memory_store("single"):
            yield store


class TestFsspecMemoryMultiWriter(FsspecHooks):
    fences_per_key = True  # fences live in the per-key head objects (docs/stores/jsonfile.md)

    @pytest.fixture
    async def store(self) -> AsyncIterator[FsspecJsonFileStore]:
        async for store in _memory_store("multi"):
            yield store


class TestFsspecLocalMultiWriter(FsspecHooks):
    fences_per_key = True

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[FsspecJsonFileStore]:
        store = FsspecJsonFileStore(
            str(tmp_path / "root"), writers="multi", fs=fsspec.filesystem("file")
        )
        yield store
        await store.aclose()
