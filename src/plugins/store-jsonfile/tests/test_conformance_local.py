"""The conformance suite on the local-disk store, with both optional hooks: a second handle
is another ``LocalJsonFileStore`` on the same root (its own caches, as another process has),
and a planted state is the key directory a rewrite leaves (format-2 batch frames and head)."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hookagent.messages import Msg
from hookagent.testing import StoreConformance, full_state
from hookagent.testing.conformance_hooks import split_document
from hookagent_store_jsonfile import LocalJsonFileStore
from hookagent_store_jsonfile.frames import encode_batches
from hookagent_store_jsonfile.layout import HEAD, id_parts, log_name, slot_parts
from hookagent_store_jsonfile.records import Head, encode_head_file


def plant_local(
    root: Path, user: str, session: str, key: str, document: bytes, version: int
) -> None:
    """Replace the key directory with what a rewrite at ``version`` writes for ``document``."""
    head_state, messages = split_document(document)
    kdir = root.joinpath(*slot_parts(user, session), *id_parts(key))
    shutil.rmtree(kdir, ignore_errors=True)
    kdir.mkdir(mode=0o700, parents=True)
    gen = secrets.token_hex(8)
    data = encode_batches(messages)
    (kdir / log_name(gen)).write_bytes(data)
    head = Head(version, gen, len(messages), len(data), head_state, tail=True)
    (kdir / HEAD).write_bytes(encode_head_file(head))


class TestLocalJsonFileStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[LocalJsonFileStore]:
        store = LocalJsonFileStore(tmp_path / "root")
        yield store
        await store.aclose()

    async def open_handle(self, store: LocalJsonFileStore) -> LocalJsonFileStore:  # type: ignore[override]
        return LocalJsonFileStore(store.root, writers=store.writers)

    async def plant_state(  # type: ignore[override]
        self,
        store: LocalJsonFileStore,
        user_id: str,
        session_id: str,
        key: str,
        document: bytes,
        version: int,
    ) -> None:
        plant_local(store.root, user_id, session_id, key, document, version)

    async def test_a_planted_state_loads_as_saved(self, store: LocalJsonFileStore) -> None:
        """The hook itself: what it plants is what a save at that version would leave."""
        state = full_state("u", "s")
        await self.plant_state(store, "u", "s", "agent_state", state.to_json().encode(), 5)
        async with self.handles(store, 1) as (other,):
            for handle in (store, other):
                got = await handle.get_versioned("u", "s")
                assert got.version == 5 and got.state is not None
                assert got.state.to_json() == state.to_json()
            assert got.state is not None
            got.state.context.append(Msg.user("next"))  # an append onto the planted frames
            assert await other.save_if_version("u", "s", got.state, 5) == 6
            assert len((await store.get_versioned("u", "s")).state.context) == 7  # type: ignore[union-attr]
