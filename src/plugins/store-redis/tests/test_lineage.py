"""Issue 13 item 7 on Redis: an acknowledged write that is no longer in the slot's history is
a VersionRegression on the next load or save, also when the surviving copy has a higher
version and when another instance wrote on top of the lost one (the lineage ring); and the
opt-in WAIT-acknowledged saves. Failovers are reproduced on one Redis with DUMP/RESTORE."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hookagent import AgentState, Msg
from hookagent.errors import StoreConfigurationError, StoreUnavailable, VersionConflict
from hookagent.store import UNCONDITIONAL
from hookagent_store_redis import RedisAgentStateStore, VersionRegression, connect
from hookagent_store_redis.testing import STANDALONE, ClusterInfo, SentinelInfo
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from .conftest import fresh_store
from .test_store import _everything, _restore, _snapshot

pytestmark = pytest.mark.anyio


@pytest.fixture
async def pair(
    standalone_store: RedisAgentStateStore,
) -> AsyncIterator[tuple[RedisAgentStateStore, RedisAgentStateStore]]:
    """Two store instances (two processes' worth of memory) on one Redis and prefix."""
    other = connect(STANDALONE, prefix=standalone_store.prefix)
    try:
        yield standalone_store, other
    finally:
        await other.aclose()


async def _write(store: RedisAgentStateStore, text: str) -> int:
    """Load, append one message, save at the loaded version: one acknowledged write."""
    got = await store.get_versioned("u", "s")
    state = got.state or AgentState("s", "u")
    state.context.append(Msg.user(text))
    return await store.save_if_version("u", "s", state, got.version)


async def _texts(store: RedisAgentStateStore) -> list[str]:
    got = await store.get_versioned("u", "s")
    return [m.text for m in got.state.context] if got.state else []


async def test_a_lost_write_under_a_higher_surviving_version_is_a_regression(
    standalone_store: RedisAgentStateStore,
) -> None:
    """Reproduction 1: after a reported regression to v3, write v4, restore the old v5."""
    store = standalone_store
    for i in range(3):
        await _write(store, f"a{i}")
    v3 = await _snapshot(store)
    for i in range(3, 5):
        await _write(store, f"a{i}")
    v5 = await _snapshot(store)  # the demoted primary's copy
    await _restore(store, v3)
    with pytest.raises(VersionRegression):
        await store.get_versioned("u", "s")
    assert await _write(store, "b3") == 4  # acknowledged on the surviving copy
    await _restore(store, v5)  # the resync brings the old v5 back: b3 is gone
    with pytest.raises(VersionRegression) as info:
        await store.get_versioned("u", "s")
    assert info.value.seen == (1, 4) and info.value.found == (1, 5)
    assert info.value.reason == "lost"
    assert "b3" not in await _texts(store)  # raised once, then the server's copy is served


async def test_a_lost_write_overwritten_by_another_instance_is_a_regression(
    pair: tuple[RedisAgentStateStore, RedisAgentStateStore],
) -> None:
    """Reproduction 2: X's v4 is lost, Y writes twice to v5: X's next load raises."""
    x, y = pair
    for i in range(3):
        await _write(x, f"x{i}")
    v3 = await _snapshot(x)
    assert await _write(x, "x3") == 4
    await _restore(x, v3)
    assert await _write(y, "y3") == 4
    assert await _write(y, "y4") == 5
    with pytest.raises(VersionRegression) as info:
        await x.get_versioned("u", "s")
    assert info.value.seen == (1, 4) and info.value.found == (1, 5)
    assert await _texts(x) == ["x0", "x1", "x2", "y3", "y4"]  # once, then served


@pytest.mark.parametrize("expected", ["loaded", "stale", "unconditional"])
async def test_a_save_on_top_of_a_lost_write_is_a_regression_and_writes_nothing(
    pair: tuple[RedisAgentStateStore, RedisAgentStateStore], expected: str
) -> None:
    x, y = pair
    for i in range(3):
        await _write(x, f"x{i}")
    v3 = await _snapshot(x)
    await _write(x, "x3")
    stale = (await x.get_versioned("u", "s")).state
    assert stale is not None
    await _restore(x, v3)  # x3 lost
    await _write(y, "y3")
    await _write(y, "y4")
    version = {"loaded": 5, "stale": 4, "unconditional": UNCONDITIONAL}[expected]
    stale.context.append(Msg.user("x4"))
    before = await _everything(x)
    with pytest.raises(VersionRegression):
        await x.save_if_version("u", "s", stale, version)
    assert await _everything(x) == before
    # reported once: the caller reloads and goes on
    assert await _write(x, "x5") == 6


async def test_a_save_onto_a_lost_older_copy_is_a_regression(
    standalone_store: RedisAgentStateStore,
) -> None:
    """The surviving copy is older and this instance saves at its version: never piled on."""
    store = standalone_store
    for i in range(2):
        await _write(store, f"a{i}")
    v2 = await _snapshot(store)
    await _write(store, "a2")
    await _restore(store, v2)
    state = AgentState("s", "u", context=[Msg.user("a0"), Msg.user("a1"), Msg.user("z")])
    with pytest.raises(VersionRegression):
        await store.save_if_version("u", "s", state, 2)


async def test_a_write_still_in_the_history_is_not_a_regression(
    pair: tuple[RedisAgentStateStore, RedisAgentStateStore],
) -> None:
    """Progress by another instance on top of what this one saw passes, up to the ring."""
    x, y = pair
    await _write(x, "x0")
    for i in range(127):  # x's version is now 127 versions deep: the ring still holds it
        await _write(y, f"y{i}")
    assert (await x.get_versioned("u", "s")).version == 128
    head = x.layout.session("u", "s").head("agent_state")
    ring = await x.client.hget(head, "r")
    assert len(ring) == 128 * 8  # bounded
    assert ring[-8:] == (await x.client.hget(head, "w"))[:8]


async def test_past_the_ring_a_write_that_cannot_be_checked_is_reported(
    pair: tuple[RedisAgentStateStore, RedisAgentStateStore],
) -> None:
    x, y = pair
    await _write(x, "x0")
    for i in range(128):  # 128 versions on top: x's version fell out of the ring
        await _write(y, f"y{i}")
    with pytest.raises(VersionRegression) as info:
        await x.get_versioned("u", "s")
    assert info.value.reason == "deep" and "cannot be told" in str(info.value)
    assert (await x.get_versioned("u", "s")).version == 129  # reported once


async def test_a_ring_left_behind_by_a_writer_without_one_is_restarted(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    for i in range(3):
        await _write(store, f"a{i}")
    head = store.layout.session("u", "s").head("agent_state")
    await store.client.hset(head, "w", "0123456789abcdef")  # an older writer's save
    store.forget("u", "s")
    assert await _write(store, "a3") == 4
    ring = await store.client.hget(head, "r")
    assert len(ring) == 8 and ring == (await store.client.hget(head, "w"))[:8]


async def test_a_real_delete_and_recreate_by_another_instance_is_not_a_regression(
    pair: tuple[RedisAgentStateStore, RedisAgentStateStore],
) -> None:
    x, y = pair
    await _write(x, "x0")
    assert await y.delete("u", "s")
    await _write(y, "y0")
    await _write(y, "y1")
    assert await _texts(x) == ["y0", "y1"]


async def test_a_save_at_the_seen_version_of_a_recreated_slot_is_a_conflict(
    pair: tuple[RedisAgentStateStore, RedisAgentStateStore],
) -> None:
    """Deleted and created again up to the same version: never appended onto."""
    x, y = pair
    await _write(x, "x0")
    await _write(x, "x1")
    state = (await x.get_versioned("u", "s")).state
    assert state is not None
    assert await y.delete("u", "s")
    await _write(y, "y0")
    await _write(y, "y1")
    state.context.append(Msg.user("x2"))
    before = await _everything(x)
    with pytest.raises(VersionConflict):
        await x.save_if_version("u", "s", state, 2)
    assert await _everything(x) == before
    assert await _texts(x) == ["y0", "y1"]


# ------------------------------------------------------------------ replicated acknowledgements


@pytest.mark.parametrize(
    "options",
    [
        {"replicas": -1},
        {"replicas": True},
        {"replicas": "1"},
        {"replicas": 1, "replica_timeout": 0},
        {"replicas": 1, "replica_timeout": float("nan")},
        {"replicas": 1, "replica_timeout": float("inf")},
        {"replicas": 1, "replica_timeout": "1"},
    ],
)
def test_bad_replication_options_are_refused_when_the_store_is_built(
    options: dict[str, object],
) -> None:
    with pytest.raises(StoreConfigurationError, match="replica"):
        connect(STANDALONE, **options)
    with pytest.raises(StoreConfigurationError, match="replica"):
        RedisAgentStateStore(Redis(), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "query", ["replicas=x", "replicas=1.5", "replica_timeout=soon", "replicas=1&replica_timeout=0"]
)
def test_bad_replication_options_in_a_url_are_refused(query: str) -> None:
    with pytest.raises(StoreConfigurationError, match="replica"):
        connect(f"{STANDALONE}?{query}")


async def test_replicated_acknowledgements_are_refused_on_a_cluster(
    redis_cluster: ClusterInfo,
) -> None:
    with pytest.raises(StoreConfigurationError, match="cluster"):
        connect(redis_cluster.url, replicas=1)
    client = RedisCluster("127.0.0.1", redis_cluster.ports[0])
    try:
        with pytest.raises(StoreConfigurationError, match="cluster"):
            RedisAgentStateStore(client, replicas=1)
    finally:
        await client.aclose()


async def test_a_save_no_replica_confirms_is_an_unknown_outcome() -> None:
    """The shared standalone Redis has no replica: WAIT 1 times out, the save is not acked."""
    async with fresh_store(STANDALONE, replicas=1, replica_timeout=0.05) as store:
        state = AgentState("s", "u")
        with pytest.raises(StoreUnavailable, match=r"reached 0 of 1 replicas.*outcome is unknown"):
            await store.save_if_version("u", "s", state, 0)
        assert state.context.unchanged_prefix == 0  # not marked committed
        got = await store.get_versioned("u", "s")  # applied on the primary all the same
        assert got.version == 1


async def test_replicated_saves_on_sentinel_wait_for_the_replica(
    redis_sentinel: SentinelInfo,
) -> None:
    redis_sentinel.wait_stable()
    url = f"{redis_sentinel.url}?replicas=1&replica_timeout=2"
    async with fresh_store(url) as store:
        assert store.replicas == 1 and store.wait_ms == 2000
        for i in range(5):
            assert await _write(store, f"m{i}") == i + 1
        await store.client.script_flush()  # NOSCRIPT inside the pipeline: EVAL, then WAIT
        assert await _write(store, "m5") == 6
        replica = next(p for p in redis_sentinel.data_ports if p != redis_sentinel.primary_port())
        head = store.layout.session("u", "s").head("agent_state")
        async with Redis(host="127.0.0.1", port=replica) as r:
            assert await r.hget(head, "v") == b"6"  # on the replica when acknowledged
