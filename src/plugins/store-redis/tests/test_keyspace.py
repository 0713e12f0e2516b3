"""G12/G14: hostile ids leave no key outside the prefix; tenants never reach each other."""

from __future__ import annotations

import pytest
from hookagent import AgentState, Msg
from hookagent.errors import VersionConflict
from hookagent.testing.corpus import HOSTILE_IDS
from hookagent_store_redis import RedisAgentStateStore, RedisSessionGate
from hookagent_store_redis.testing import ClusterInfo, SentinelInfo

pytestmark = pytest.mark.anyio


async def seed_hostile(store: RedisAgentStateStore) -> None:
    gate = RedisSessionGate(store, lease_ttl=5)
    for hid in HOSTILE_IDS:
        state = AgentState(hid, hid)
        state.context.append(Msg.user(hid))
        async with gate.acquire(hid, hid, timeout=5) as fence:
            await store.save_if_version(hid, hid, state, 0, fence=fence)
        await store.save_if_version("u", hid, AgentState(hid, "u"), 0, key=hid)
        await store.list_session_ids(hid, cursor=hid)
    for hid in HOSTILE_IDS[::3]:
        assert await store.delete(hid, hid)


def assert_contained(keys: list[bytes], prefix: str) -> None:
    assert keys, "the test wrote nothing?"
    outside = [k for k in keys if not k.startswith(f"{prefix}:".encode())]
    assert outside == []
    for k in keys:  # no raw id byte ever reaches a key: only the encoded alphabet
        tail = k[len(prefix) + 1 :].decode("ascii")
        assert set(tail) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-~{}:"), k


async def test_cluster_keyspace_holds_only_prefixed_keys(
    cluster_store: RedisAgentStateStore, redis_cluster: ClusterInfo
) -> None:
    await seed_hostile(cluster_store)
    assert_contained(redis_cluster.all_keys(), cluster_store.prefix)


async def test_sentinel_keyspace_holds_only_prefixed_keys(
    sentinel_store: RedisAgentStateStore, redis_sentinel: SentinelInfo
) -> None:
    await seed_hostile(sentinel_store)
    assert_contained(redis_sentinel.all_keys(), sentinel_store.prefix)


async def test_standalone_keys_of_this_prefix_use_the_encoded_alphabet(
    standalone_store: RedisAgentStateStore,
) -> None:
    # the shared server holds other tests' keys: check ours, and that hostile ids made no other
    await seed_hostile(standalone_store)
    prefix = standalone_store.prefix
    ours = [k async for k in standalone_store.client.scan_iter(match=f"{prefix}:*", count=1000)]
    assert_contained(ours, prefix)
    for hid in HOSTILE_IDS:  # no key is named after a raw hostile id
        if len(hid) > 2:
            assert not await standalone_store.client.exists(hid)


async def test_tenant_b_reaches_nothing_of_tenant_a(
    cluster_store: RedisAgentStateStore, redis_cluster: ClusterInfo
) -> None:
    store = cluster_store
    a_sessions = ["s1", "a", "a*", "ab", "*", "{s1}"]
    for sid in a_sessions:
        await store.save_if_version("alice", sid, AgentState(sid, "alice", summary="A"), 0)
    before = sorted(redis_cluster.all_keys())
    gate = RedisSessionGate(store, lease_ttl=5)
    for bob in ("bob", "alice ", "Alice", "alic", "alice*", "*", "", "alice:s1", "{alice}"):
        for sid in a_sessions:
            assert (await store.get_versioned(bob, sid)).version == 0
            assert not await store.exists(bob, sid)
            assert not await store.delete(bob, sid)
            assert not await store.delete(bob, sid, key="agent_state")
            with pytest.raises(VersionConflict):
                await store.save_if_version(bob, sid, AgentState(sid, bob), 1)
            async with gate.acquire(bob, sid, timeout=1):
                pass
        assert (await store.list_session_ids(bob)).session_ids == ()
        assert (await store.list_session_ids(bob, cursor="a")).session_ids == ()
    for sid in a_sessions:
        got = await store.get_versioned("alice", sid)
        assert got.version == 1 and got.state is not None and got.state.summary == "A"
    # bob's calls created only bob's gate counters, never touched a key of alice
    after = sorted(redis_cluster.all_keys())
    assert [k for k in before if k not in after] == []
    alice_tag = b":{alice:"
    assert [k for k in after if alice_tag in k] == [k for k in before if alice_tag in k]
