"""Fixtures: the shared standalone Redis (unique prefix per test), a private cluster and a
private sentinel group (session-scoped, started as subprocesses, stopped at the end)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator, Iterator

import pytest
from hookagent_store_redis import RedisAgentStateStore, connect
from hookagent_store_redis.testing import (
    STANDALONE,
    ClusterInfo,
    SentinelInfo,
    delete_prefix,
    new_prefix,
    run_cluster,
    run_sentinel,
)


def pytest_configure(config: pytest.Config) -> None:
    for tool in ("redis-server", "redis-cli"):
        if shutil.which(tool) is None:  # a missing service must fail loudly, never skip
            raise pytest.UsageError(f"{tool} is required by the store-redis tests")


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    with run_cluster(tmp_path_factory.mktemp("cluster")) as info:
        yield info


@pytest.fixture(scope="session")
def redis_sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelInfo]:
    with run_sentinel(tmp_path_factory.mktemp("sentinel")) as info:
        yield info


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def fresh_store(url: str, **options: object) -> AsyncIterator[RedisAgentStateStore]:
    prefix = new_prefix()
    store = connect(url, prefix=prefix, **options)
    try:
        yield store
    finally:
        with contextlib.suppress(Exception):
            await delete_prefix(store.client, prefix)
        await store.aclose()


@pytest.fixture
async def standalone_store() -> AsyncIterator[RedisAgentStateStore]:
    async with fresh_store(STANDALONE) as store:
        yield store


@pytest.fixture
async def cluster_store(redis_cluster: ClusterInfo) -> AsyncIterator[RedisAgentStateStore]:
    async with fresh_store(redis_cluster.url) as store:
        yield store


@pytest.fixture
async def sentinel_store(redis_sentinel: SentinelInfo) -> AsyncIterator[RedisAgentStateStore]:
    async with fresh_store(redis_sentinel.url) as store:
        yield store
