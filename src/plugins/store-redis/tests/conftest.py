"""Fixtures: the shared standalone Redis (unique prefix per test), a private cluster and a
private sentinel group (session-scoped, started as subprocesses, stopped at the end)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(params=["standalone", "sentinel"])
def held_url(request: pytest.FixtureRequest) -> str:
    """A URL of each topology whose scripts go on held connections (``logwire``)."""
    if request.param == "sentinel":
        return str(request.getfixturevalue("redis_sentinel").url)
    return STANDALONE


@pytest.fixture
async def held_store(held_url: str) -> AsyncIterator[RedisAgentStateStore]:
    async with fresh_store(held_url) as store:
        yield store


WORKERS = Path(__file__).with_name("workers.py")


def _run_workers(mode: str, url: str, prefix: str, n: int, count: int) -> list[dict[str, Any]]:
    """Run ``n`` worker processes of ``workers.py`` at once (each waits, once started, until
    all are: then "go"); their JSON results, in order."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKERS), mode, url, prefix, str(w), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(n)
    ]
    for p in procs:
        assert p.stdout is not None
        assert p.stdout.readline() == b"ready\n", p.stderr.read().decode() if p.stderr else ""
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(b"go\n")
        p.stdin.flush()
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        assert p.returncode == 0, stderr.decode()
        out.append(json.loads(stdout.decode().strip().splitlines()[-1]))
    return out


@pytest.fixture
def run_workers() -> Callable[..., list[dict[str, Any]]]:
    return _run_workers


@pytest.fixture(params=["standalone", "cluster"])
async def topology_store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAgentStateStore]:
    """A fresh store on standalone, then on the cluster (the two index protocols)."""
    url = (
        STANDALONE
        if request.param == "standalone"
        else request.getfixturevalue("redis_cluster").url
    )
    async with fresh_store(url) as store:
        yield store
