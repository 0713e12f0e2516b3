"""The kernel's SessionLogConformance on the three topologies, on real servers, with all
three optional hooks: a second handle is another ``connect_log`` of the same URL and prefix
(its own client), and orphans and heads are planted key by key with plain commands
(``hookagent_store_redis.testing``), as another writer would."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import pytest
from hookagent.sessionlog import LogEvent
from hookagent.testing import SessionLogConformance
from hookagent_store_redis import RedisSessionLog, connect_log
from hookagent_store_redis.testing import (
    STANDALONE,
    ClusterInfo,
    SentinelInfo,
    delete_prefix,
    new_prefix,
    plant_log_head,
    plant_log_orphan,
)


@contextlib.asynccontextmanager
async def fresh_log(url: str) -> AsyncIterator[RedisSessionLog]:
    prefix = new_prefix()
    log = connect_log(url, prefix=prefix)
    try:
        yield log
    finally:
        with contextlib.suppress(Exception):
            await delete_prefix(log.client, prefix)
        await log.aclose()


class RedisLogConformance(SessionLogConformance):
    url = ""  # the topology's URL, set by each class's log fixture

    async def another_handle(self, log: RedisSessionLog) -> RedisSessionLog:
        """A handle of its own, connected as another serving process's would be: a cluster
        client's first command maps the slots and connects to the nodes (several round
        trips), which would otherwise land inside the suite's takeover race."""
        assert self.url
        handle = connect_log(self.url, prefix=log.prefix)
        if "+cluster" in self.url:
            from redis.asyncio.cluster import RedisCluster

            await handle.client.ping(target_nodes=RedisCluster.PRIMARIES)
        else:
            await handle.client.ping()
        return handle

    async def plant_orphan(
        self,
        log: RedisSessionLog,
        user_id: str,
        session_id: str,
        batch_id: str,
        events: Sequence[LogEvent],
    ) -> None:
        await plant_log_orphan(log, user_id, session_id, batch_id, events)

    async def plant_head(
        self, log: RedisSessionLog, user_id: str, session_id: str, seq: int
    ) -> None:
        await plant_log_head(log, user_id, session_id, seq)


class TestStandalone(RedisLogConformance):
    @pytest.fixture
    async def log(self) -> AsyncIterator[RedisSessionLog]:
        self.url = STANDALONE
        async with fresh_log(STANDALONE) as log:
            yield log


class TestCluster(RedisLogConformance):
    @pytest.fixture
    async def log(self, redis_cluster: ClusterInfo) -> AsyncIterator[RedisSessionLog]:
        self.url = redis_cluster.url
        async with fresh_log(redis_cluster.url) as log:
            yield log


class TestSentinel(RedisLogConformance):
    @pytest.fixture
    async def log(self, redis_sentinel: SentinelInfo) -> AsyncIterator[RedisSessionLog]:
        self.url = redis_sentinel.url
        async with fresh_log(redis_sentinel.url) as log:
            yield log
