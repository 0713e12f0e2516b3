"""The kernel's conformance suite on the three topologies, on real servers, with both
optional hooks: a second handle is another ``connect`` of the same URL and prefix (its own
client, cache and memory of versions seen), and a planted state is written key by key with
plain commands, as another process would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hookagent import Msg
from hookagent.store import AgentStateStore
from hookagent.testing import StoreConformance, full_state
from hookagent.testing.conformance_hooks import split_document
from hookagent_store_redis import RedisAgentStateStore, connect
from hookagent_store_redis.testing import STANDALONE, ClusterInfo, SentinelInfo, plant_slot


class RedisConformance(StoreConformance):
    url = ""  # the topology's URL, set by each class's store fixture

    async def open_handle(self, store: AgentStateStore) -> AgentStateStore:
        assert isinstance(store, RedisAgentStateStore) and self.url
        return connect(self.url, prefix=store.prefix)

    async def plant_state(
        self,
        store: AgentStateStore,
        user_id: str,
        session_id: str,
        key: str,
        document: bytes,
        version: int,
    ) -> None:
        assert isinstance(store, RedisAgentStateStore)
        head, messages = split_document(document)
        await plant_slot(store, user_id, session_id, key, head, messages, version)

    async def test_a_planted_state_of_its_own_slot_loads_as_written(
        self, store: RedisAgentStateStore
    ) -> None:
        """The planted-state checks expect CorruptState: this one proves a plant is a valid
        slot (chain, count, counters, key set, index), so they fail for the planted ids, not
        for a broken plant."""
        document = full_state("u", "s").to_json().encode()
        await self.plant_state(store, "u", "s", "agent_state", document, 7)
        async with self.handles(store, 1) as (other,):
            for handle in (store, other):
                got = await handle.get_versioned("u", "s")
                assert got.version == 7 and got.state is not None
                assert got.state.to_json().encode() == document
            assert (await store.list_session_ids("u")).session_ids == ("s",)
            got.state.context.append(Msg.user("after"))
            assert await other.save_if_version("u", "s", got.state, 7) == 8
            loaded = await store.get_versioned("u", "s")
            assert loaded.state is not None and loaded.state.context[-1].text == "after"
            assert await store.delete("u", "s") and not await other.exists("u", "s")


class TestStandalone(RedisConformance):
    @pytest.fixture
    async def store(
        self, standalone_store: RedisAgentStateStore
    ) -> AsyncIterator[RedisAgentStateStore]:
        self.url = STANDALONE
        yield standalone_store


class TestCluster(RedisConformance):
    @pytest.fixture
    async def store(
        self, cluster_store: RedisAgentStateStore, redis_cluster: ClusterInfo
    ) -> AsyncIterator[RedisAgentStateStore]:
        self.url = redis_cluster.url
        yield cluster_store


class TestSentinel(RedisConformance):
    @pytest.fixture
    async def store(
        self, sentinel_store: RedisAgentStateStore, redis_sentinel: SentinelInfo
    ) -> AsyncIterator[RedisAgentStateStore]:
        self.url = redis_sentinel.url
        yield sentinel_store
