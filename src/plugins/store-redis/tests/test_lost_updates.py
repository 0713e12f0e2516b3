"""G6: 8 processes compare-and-set on one slot; 0 lost updates. Negative control: GET/SET."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hookagent import AgentState
from hookagent_store_redis import RedisAgentStateStore, connect
from hookagent_store_redis.testing import STANDALONE, ClusterInfo

USER, SESSION = "lost-update-user", "one-slot"
pytestmark = pytest.mark.anyio


async def check_cas(store: RedisAgentStateStore, url: str, attempts: int, run_workers: Any) -> None:
    await store.save_if_version(USER, SESSION, AgentState(SESSION, USER), 0)
    results = run_workers("cas", url, store.prefix, 8, attempts)
    acked = [(tok, v) for r in results for tok, v in r["acked"]]
    versions = Counter(v for _, v in acked)
    assert not [v for v, c in versions.items() if c > 1], "a version was acknowledged twice"
    final = await connect(url, prefix=store.prefix).get_versioned(USER, SESSION)
    assert final.state is not None
    history = [m.text for m in final.state.context]
    counts = Counter(history)
    assert all(counts[tok] == 1 for tok, _ in acked), "an acknowledged token is lost or doubled"
    assert set(history) == {tok for tok, _ in acked}, "a token appears that was never acked"
    assert final.version == 1 + len(acked)
    # each acked token sits at the index its version implies (version v appended message v-1)
    assert all(history[v - 2] == tok for tok, v in acked)
    assert sum(r["conflicts"] for r in results) + len(acked) == 8 * attempts
    assert len(acked) > 8  # every process made progress at least sometimes


async def test_cas_standalone_no_lost_update(
    standalone_store: RedisAgentStateStore, run_workers: Any
) -> None:
    await check_cas(standalone_store, STANDALONE, 250, run_workers)


async def test_cas_cluster_no_lost_update(
    cluster_store: RedisAgentStateStore, redis_cluster: ClusterInfo, run_workers: Any
) -> None:
    await check_cas(cluster_store, redis_cluster.url, 100, run_workers)


async def test_naive_read_modify_write_loses_updates(
    standalone_store: RedisAgentStateStore, run_workers: Any
) -> None:
    results = run_workers("naive", STANDALONE, standalone_store.prefix, 8, 100)
    acked = [tok for r in results for tok in r["acked"]]
    raw = await standalone_store.client.get(f"{standalone_store.prefix}:naive")
    final = json.loads(raw)
    lost = len(set(acked) - set(final))
    print(f"\nnaive read-modify-write: {lost} of {len(acked)} acknowledged updates lost")
    assert len(acked) == 800
    assert lost > 0, "the negative control should lose updates"
