"""The kernel's conformance suite on the three topologies, on real servers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hookagent.testing import StoreConformance
from hookagent_store_redis import RedisAgentStateStore


class TestStandalone(StoreConformance):
    @pytest.fixture
    async def store(
        self, standalone_store: RedisAgentStateStore
    ) -> AsyncIterator[RedisAgentStateStore]:
        yield standalone_store


class TestCluster(StoreConformance):
    @pytest.fixture
    async def store(
        self, cluster_store: RedisAgentStateStore
    ) -> AsyncIterator[RedisAgentStateStore]:
        yield cluster_store


class TestSentinel(StoreConformance):
    @pytest.fixture
    async def store(
        self, sentinel_store: RedisAgentStateStore
    ) -> AsyncIterator[RedisAgentStateStore]:
        yield sentinel_store
