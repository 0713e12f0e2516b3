from __future__ import annotations

import pytest
from hookagent import AgentState, Msg
from hookagent.codec import decode_msg
from hookagent.errors import CorruptState, Fenced, UnsupportedSchemaVersion
from hookagent.store import UNCONDITIONAL, Fence, InMemoryAgentStateStore
from hookagent.store.memory import _Entry
from hookagent.testing import StoreConformance
from hookagent.testing.conformance_hooks import split_document

pytestmark = pytest.mark.anyio


def plant(
    store: InMemoryAgentStateStore,
    user: str,
    session: str,
    key: str,
    head: bytes,
    msgs: list[Msg],
    version: int,
) -> None:
    store._data.setdefault(user, {}).setdefault(session, {})[key] = _Entry(
        version, head, list(msgs), len(msgs)
    )


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self) -> InMemoryAgentStateStore:
        return InMemoryAgentStateStore()

    async def open_handle(self, store: object) -> InMemoryAgentStateStore:
        assert isinstance(store, InMemoryAgentStateStore)
        return store.another_handle()

    async def plant_state(
        self, store: object, user_id: str, session_id: str, key: str, document: bytes, version: int
    ) -> None:
        assert isinstance(store, InMemoryAgentStateStore)
        head, messages = split_document(document)
        plant(store, user_id, session_id, key, head, [decode_msg(m) for m in messages], version)


async def test_a_save_over_a_head_that_does_not_load_writes_nothing() -> None:
    store = InMemoryAgentStateStore()
    for head in (b"{not json", b'{"schema_version": 1, "session_id": 5}'):
        plant(store, "u", "s", "agent_state", head, [], 2)
        for expected in (2, UNCONDITIONAL):
            with pytest.raises(CorruptState, match="user_id='u' session_id='s'"):
                await store.save_if_version("u", "s", AgentState("s", "u"), expected)
        assert store._data["u"]["s"]["agent_state"].head == head  # the evidence stays


async def test_load_errors_name_the_slot() -> None:
    store = InMemoryAgentStateStore()
    plant(store, "u", "s", "k", b'{"schema_version": 99, "session_id": "s"}', [], 1)
    with pytest.raises(UnsupportedSchemaVersion, match="user_id='u' session_id='s' key='k'"):
        await store.get_versioned("u", "s", "k")
    with pytest.raises(UnsupportedSchemaVersion, match="key='k'"):
        await store.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL, key="k")


async def test_a_refused_fence_is_not_recorded() -> None:
    """A fenced save that loses its compare-and-set records nothing: the lease it carried
    did not write, so an older holder that still owns the newest *written* epoch goes on."""
    store = InMemoryAgentStateStore()
    await store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=Fence(1, "a"))
    with pytest.raises(Exception, match="version conflict"):
        await store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=Fence(2, "b"))
    assert await store.save_if_version("u", "s", AgentState("s", "u"), 1, fence=Fence(1, "a")) == 2
    with pytest.raises(Fenced, match="user_id='u'"):
        await store.save_if_version("u", "s", AgentState("s", "u"), 2, fence=Fence(1, "b"))
