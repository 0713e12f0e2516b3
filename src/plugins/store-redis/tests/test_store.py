"""Behaviour beyond the conformance suite: round trips, NOSCRIPT, appends, cache, TTL, the
index's crash ordering, regressions, corrupt data, URLs and errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import redis
from hookagent import AgentState, Msg
from hookagent.codec import encode_msg
from hookagent.errors import (
    CorruptState,
    InvalidStoreArgument,
    StoreConfigurationError,
    StoreUnavailable,
)
from hookagent.store import UNCONDITIONAL, Fence, Versioned
from hookagent.testing.corpus import ENVELOPES
from hookagent_store_redis import RedisAgentStateStore, VersionRegression, connect
from hookagent_store_redis.testing import (
    STANDALONE,
    ClusterInfo,
    delete_prefix,
    free_port,
    new_prefix,
)
from redis.asyncio.cluster import RedisCluster

pytestmark = pytest.mark.anyio


class Counting:
    """A client proxy that records each command the store sends (and may send one twice)."""

    def __init__(self, inner: Any, *, replay_saves: bool = False) -> None:
        self.inner, self.replay_saves = inner, replay_saves
        self.calls: list[tuple[str, tuple[Any, ...], Any]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("evalsha", "eval", "exists", "zadd", "zrem", "zrangebylex", "lrange"):
            return attr

        async def call(*args: Any) -> Any:
            result = await attr(*args)
            if self.replay_saves and name == "evalsha" and args[5] in (b"a", "a", b"r", "r"):
                result = await attr(*args)  # a driver retry after a lost reply
            self.calls.append((name, args, result))
            return result

        return call

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
async def counted() -> AsyncIterator[tuple[RedisAgentStateStore, Counting]]:
    plain = connect(STANDALONE, prefix=new_prefix())
    proxy = Counting(plain.client)
    store = RedisAgentStateStore(proxy, prefix=plain.prefix)
    try:
        yield store, proxy
    finally:
        await delete_prefix(plain.client, plain.prefix)
        await plain.aclose()


def turn(state: AgentState, i: int) -> None:
    state.context.extend(
        [Msg.user(f"u{i}"), Msg.assistant(f"call{i}"), Msg("tool", f"r{i}"), Msg.assistant(f"a{i}")]
    )


async def test_one_round_trip_per_save_and_per_warm_load(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    store, proxy = counted
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    assert len(proxy.calls) == 1  # one node: the script indexes the session atomically
    await store.get_versioned("u", "s")  # the load script is cached on the server from here on
    for i in range(5):
        proxy.calls.clear()
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        turn(got.state, i)
        await store.save_if_version("u", "s", got.state, got.version)
        assert proxy.names() == ["evalsha", "evalsha"]  # one load, one save
        load_answer, save_args = proxy.calls[0][2], proxy.calls[1][1]
        assert load_answer[9] == b""  # the cached messages were not re-read
        assert load_answer[7] == b""  # nor the head's sections: a version check
        assert len(save_args) == 2 + 5 + 16 + 4  # sha, numkeys, 5 keys, 16 fixed args, 4 msgs


async def test_warm_calls_share_one_message_list_and_a_rewrite_leaves_old_loads_alone(
    standalone_store: RedisAgentStateStore,
) -> None:
    """A warm load and a save cost what the call added: the loaded histories share the
    instance's append-only message list (no copy of the history per call), and a rewrite
    starts a new list, so a history loaded before it still reads what it loaded."""
    store = standalone_store
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    got = await store.get_versioned("u", "s")
    shared = got.state.context._base  # type: ignore[union-attr]
    for i in range(1, 4):
        turn(got.state, i)  # type: ignore[arg-type]
        await store.save_if_version("u", "s", got.state, got.version)  # type: ignore[arg-type]
        got = await store.get_versioned("u", "s")
        assert got.state.context._base is shared  # type: ignore[union-attr]
        assert len(got.state.context) == 4 * (i + 1)  # type: ignore[union-attr]
    before = got.state.context  # type: ignore[union-attr]
    kept = [m.text for m in before]
    rewritten = await store.get_versioned("u", "s")
    rewritten.state.context[0] = Msg.user("changed")  # type: ignore[union-attr]
    await store.save_if_version("u", "s", rewritten.state, rewritten.version)  # type: ignore[arg-type]
    assert [m.text for m in before] == kept  # the old load still reads what it loaded
    after = await store.get_versioned("u", "s")
    assert after.state.context[0].text == "changed"  # type: ignore[union-attr]
    assert [m.text for m in after.state.context][1:] == kept[1:]  # type: ignore[union-attr]
    assert after.state.context._base is not shared  # type: ignore[union-attr]


async def test_an_unchanged_warm_load_sends_no_state_and_a_changed_head_is_read(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    """A warm load of a slot nobody wrote since is a version check: no sections, no
    messages; a write by another instance (a new head) is read in full on the next load."""
    store, proxy = counted
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        state = AgentState("s", "u")
        turn(state, 0)
        await store.save_if_version("u", "s", state, 0)
        for _ in range(2):
            proxy.calls.clear()
            got = await store.get_versioned("u", "s")
            assert got.version == 1 and got.state is not None and got.state.context == state.context
            ((name, _, answer),) = proxy.calls
            assert name == "evalsha" and answer[7] == b"" and answer[9] == b""
        theirs = await other.get_versioned("u", "s")
        assert theirs.state is not None
        theirs.state.summary = "written by the other instance"
        await other.save_if_version("u", "s", theirs.state, 1)  # a new head, no new message
        proxy.calls.clear()
        mine = await store.get_versioned("u", "s")
        assert mine.version == 2 and mine.state is not None
        assert mine.state.summary == "written by the other instance"
        assert proxy.calls[0][2][7] != b"" and proxy.calls[0][2][9] == b""
        proxy.calls.clear()  # and from there on it is a version check again
        again = await store.get_versioned("u", "s")
        assert again.state is not None and again.state.summary == "written by the other instance"
        assert proxy.calls[0][2][7] == b""
    finally:
        await other.aclose()


async def test_sections_damaged_in_place_are_refused_by_the_next_save(
    standalone_store: RedisAgentStateStore,
) -> None:
    """The version-check load does not resend sections whose write id did not change, so
    sections damaged in place are first met by the save, whose script checks them before
    any write; then every load reads and refuses them too."""
    store = standalone_store
    state = AgentState("s", "u")
    state.context.append(Msg.user("a"))
    await store.save_if_version("u", "s", state, 0)
    got = await store.get_versioned("u", "s")
    head = store.layout.session("u", "s").head("agent_state")
    await store.client.hset(head, "d", "{not json")
    assert (await store.get_versioned("u", "s")).version == 1  # the sections it holds
    assert got.state is not None
    got.state.context.append(Msg.user("b"))
    with pytest.raises(CorruptState, match="nothing was written"):
        await store.save_if_version("u", "s", got.state, 1)
    assert await store.client.hget(head, "v") == b"1"
    with pytest.raises(CorruptState):  # the refused save dropped what the instance held
        await store.get_versioned("u", "s")


async def test_warm_load_reads_only_the_tail_written_by_another_instance(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    store, proxy = counted
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        state = AgentState("s", "u")
        turn(state, 0)
        await other.save_if_version("u", "s", state, 0)
        assert len((await store.get_versioned("u", "s")).state.context) == 4  # type: ignore[union-attr]
        for i in range(1, 4):
            got = await other.get_versioned("u", "s")
            turn(got.state, i)  # type: ignore[arg-type]
            await other.save_if_version("u", "s", got.state, got.version)  # type: ignore[arg-type]
            proxy.calls.clear()
            mine = await store.get_versioned("u", "s")
            assert [m.text for m in mine.state.context][-4:] == [
                f"u{i}",
                f"call{i}",
                f"r{i}",
                f"a{i}",
            ]  # type: ignore[union-attr]
            assert len(proxy.calls) == 1 and proxy.calls[0][2][9].count(b"\n") == 3  # 4 new
    finally:
        await other.aclose()


async def test_cold_load_reads_the_list_outside_the_script(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    """Copying thousands of messages through Lua costs 10x a plain LRANGE: a cold load takes
    the head from the script and the messages from LRANGE, checked by the hash chain."""
    store, proxy = counted
    state = AgentState("s", "u")
    turn(state, 0)
    turn(state, 1)
    await store.save_if_version("u", "s", state, 0)
    store.forget("u", "s")
    proxy.calls.clear()
    got = await store.get_versioned("u", "s")
    assert got.state is not None and got.state.context == state.context
    assert proxy.names() == ["evalsha", "lrange"]
    assert proxy.calls[0][2][9] == b""  # the script sent no messages


async def test_cold_load_of_a_list_rewritten_meanwhile_is_read_again_atomically(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    store, proxy = counted
    state = AgentState("s", "u")
    turn(state, 0)
    turn(state, 1)
    await store.save_if_version("u", "s", state, 0)
    other = connect(STANDALONE, prefix=store.prefix)
    real = proxy.inner.lrange

    async def rewritten_before_the_read(*args: Any) -> Any:
        del proxy.inner.lrange  # once
        got = await other.get_versioned("u", "s")
        assert got.state is not None
        got.state.context[0] = Msg.user("edited")  # a changed prefix: a rewrite
        await other.save_if_version("u", "s", got.state, got.version)
        return await real(*args)

    try:
        proxy.inner.lrange = rewritten_before_the_read
        store.forget("u", "s")
        proxy.calls.clear()
        got = await store.get_versioned("u", "s")
        assert got.version == 2 and got.state is not None
        assert got.state.context[0].text == "edited" and len(got.state.context) == 8
        assert proxy.names() == ["evalsha", "lrange", "evalsha"]  # then the atomic read
    finally:
        await other.aclose()


@pytest.mark.parametrize("damage", ["tampered", "missing"])
async def test_cold_load_of_a_damaged_list_is_corrupt(
    standalone_store: RedisAgentStateStore, damage: str
) -> None:
    store = standalone_store
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    key = store.layout.session("u", "s").messages("agent_state")
    if damage == "tampered":  # a valid message, but not the one saved
        await store.client.lset(key, 1, encode_msg(Msg.user("not what was saved")))
    else:
        await store.client.delete(key)
    store.forget("u", "s")
    with pytest.raises(CorruptState):
        await store.get_versioned("u", "s")


async def test_script_flush_between_calls_reloads_the_script(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    store, proxy = counted
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    for i in range(3):
        await store.client.inner.script_flush()
        got = await store.get_versioned("u", "s")
        await store.client.inner.script_flush()
        turn(got.state, i)  # type: ignore[arg-type]
        assert await store.save_if_version("u", "s", got.state, got.version) == i + 2  # type: ignore[arg-type]
    assert proxy.names().count("eval") >= 6  # every NOSCRIPT answered by one EVAL
    assert len((await store.get_versioned("u", "s")).state.context) == 12  # type: ignore[union-attr]


def flush_all(cluster: ClusterInfo) -> None:
    import redis

    for port in cluster.ports:
        with redis.Redis("127.0.0.1", port) as r:
            r.script_flush()


async def test_script_flush_on_cluster(redis_cluster: ClusterInfo) -> None:
    store = connect(redis_cluster.url, prefix=new_prefix())
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        flush_all(redis_cluster)
        got = await store.get_versioned("u", "s")
        flush_all(redis_cluster)
        turn(got.state, 0)  # type: ignore[arg-type]
        assert await store.save_if_version("u", "s", got.state, 1) == 2  # type: ignore[arg-type]
        flush_all(redis_cluster)
        assert await store.delete("u", "s")
    finally:
        await delete_prefix(store.client, store.prefix)
        await store.aclose()


async def test_appends_keep_the_generation_rewrites_bump_it(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    head = store.layout.session("u", "s").head("agent_state")
    lst = store.layout.session("u", "s").messages("agent_state")
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    gen = await store.client.hget(head, "g")
    for i in range(1, 3):
        turn(state, i)
        await store.save_if_version("u", "s", state, i)
        assert await store.client.hget(head, "g") == gen
    assert await store.client.llen(lst) == 12
    state.context[5] = Msg.assistant("edited")  # a changed prefix: truncate + append
    await store.save_if_version("u", "s", state, 3)
    assert await store.client.hget(head, "g") != gen
    got = await store.get_versioned("u", "s")
    assert got.state is not None and got.state.context[5].text == "edited"
    assert len(got.state.context) == 12


async def test_long_history_rewrite_and_cold_load(standalone_store: RedisAgentStateStore) -> None:
    state = AgentState("s", "u")
    state.context.extend(Msg.user(f"m{i}") for i in range(2500))  # > one RPUSH chunk
    await standalone_store.save_if_version("u", "s", state, 0)
    cold = connect(STANDALONE, prefix=standalone_store.prefix)
    try:
        got = await cold.get_versioned("u", "s")
        assert [m.text for m in got.state.context] == [f"m{i}" for i in range(2500)]  # type: ignore[union-attr]
    finally:
        await cold.aclose()


async def test_replayed_save_is_applied_once(
    counted: tuple[RedisAgentStateStore, Counting],
) -> None:
    store, proxy = counted
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    proxy.replay_saves = True
    state = (await store.get_versioned("u", "s")).state
    turn(state, 0)  # type: ignore[arg-type]
    assert await store.save_if_version("u", "s", state, 1) == 2  # type: ignore[arg-type]
    assert await store.save_if_version("u", "s", AgentState("s", "u", "x"), UNCONDITIONAL) == 3
    got = await store.get_versioned("u", "s")
    assert got.version == 3 and got.state is not None and got.state.summary == "x"


# ------------------------------------------------------------------ regressions (G9)


async def _snapshot(store: RedisAgentStateStore) -> dict[str, bytes | None]:
    sk = store.layout.session("u", "s")
    keys = [sk.head("agent_state"), sk.messages("agent_state"), sk.keyset, sk.meta]
    return {k: await store.client.dump(k) for k in keys}


async def _restore(store: RedisAgentStateStore, snap: dict[str, bytes | None]) -> None:
    for k, v in snap.items():
        if v is None:
            await store.client.delete(k)
        else:
            await store.client.restore(k, 0, v, replace=True)


async def test_lost_writes_raise_a_regression_once(standalone_store: RedisAgentStateStore) -> None:
    store = standalone_store
    state = AgentState("s", "u")
    await store.save_if_version("u", "s", state, 0)
    turn(state, 0)
    await store.save_if_version("u", "s", state, 1)
    snap = await _snapshot(store)  # what a replica had when the primary died
    turn(state, 1)
    await store.save_if_version("u", "s", state, 2)
    assert (await store.get_versioned("u", "s")).version == 3
    await _restore(store, snap)  # failover: version 3 is lost
    with pytest.raises(VersionRegression) as info:
        await store.get_versioned("u", "s")
    assert isinstance(info.value, StoreUnavailable) and info.value.found == (1, 2)
    got = await store.get_versioned("u", "s")  # raised once; then the server's state is served
    assert got.version == 2 and len(got.state.context) == 4  # type: ignore[union-attr]


async def test_same_version_rewritten_after_loss_is_a_regression(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        state = AgentState("s", "u")
        await store.save_if_version("u", "s", state, 0)
        snap = await _snapshot(store)
        turn(state, 0)
        await store.save_if_version("u", "s", state, 1)  # store saw version 2 = turn 0
        await _restore(store, snap)  # lost
        got = await other.get_versioned("u", "s")
        got.state.context.append(Msg.user("different"))  # type: ignore[union-attr]
        await other.save_if_version("u", "s", got.state, 1)  # type: ignore[arg-type]
        # the store's own CAS at version 2 must not pile onto a different version 2
        turn(state, 1)
        with pytest.raises(VersionRegression):
            await store.save_if_version("u", "s", state, 2)
        snap2 = await _snapshot(store)
        await store.get_versioned("u", "s")  # adopts the server's version 2
        turn(got.state, 9)  # type: ignore[arg-type]
        await other.save_if_version("u", "s", got.state, 2)  # type: ignore[arg-type]
        await store.get_versioned("u", "s")  # caches version 3
        await _restore(store, snap2)
        with pytest.raises(VersionRegression):  # a load seeing version 2 again
            await store.get_versioned("u", "s")
    finally:
        await other.aclose()


async def test_lost_creation_is_a_regression(standalone_store: RedisAgentStateStore) -> None:
    store = standalone_store
    sk = store.layout.session("u", "s")
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    await store.get_versioned("u", "s")
    await store.client.delete(sk.head("agent_state"), sk.keyset, sk.meta)  # never replicated
    with pytest.raises(VersionRegression):
        await store.get_versioned("u", "s")
    assert (await store.get_versioned("u", "s")).version == 0
    # a real delete by another instance is not a regression
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    await store.get_versioned("u", "s")
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        assert await other.delete("u", "s")
    finally:
        await other.aclose()
    assert (await store.get_versioned("u", "s")).version == 0


async def test_replaced_cached_prefix_is_never_served(
    standalone_store: RedisAgentStateStore,
) -> None:
    """Lost writes, then new writes reusing the generation and count: the chain tells."""
    store = standalone_store
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        snap = await _snapshot(store)
        state = AgentState("s", "u")
        turn(state, 0)
        await store.save_if_version("u", "s", state, 1)
        await store.get_versioned("u", "s")  # cached: generation g, 4 messages
        await _restore(store, snap)  # lost
        other_state = (await other.get_versioned("u", "s")).state
        turn(other_state, 7)  # type: ignore[arg-type]
        await other.save_if_version("u", "s", other_state, 1)  # type: ignore[arg-type]
        store._seen.pop(("u", "s", "agent_state"))  # isolate the cache check from G9's
        got = await store.get_versioned("u", "s")
        assert [m.text for m in got.state.context] == ["u7", "call7", "r7", "a7"]  # type: ignore[union-attr]
    finally:
        await other.aclose()


# ------------------------------------------------------------------ TTL and index ordering


async def test_sliding_ttl(standalone_store: RedisAgentStateStore) -> None:
    store = RedisAgentStateStore(standalone_store.client, prefix=standalone_store.prefix, ttl=0.6)
    sk = store.layout.session("u", "s")
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    assert 0 < await store.client.pttl(sk.head("agent_state")) <= 600
    assert await store.client.pttl(sk.meta) == -1  # counters never expire
    for _ in range(3):
        await asyncio.sleep(0.3)
        assert (await store.get_versioned("u", "s")).version == 1  # each load slides it
    await asyncio.sleep(0.9)
    assert (await store.get_versioned("u", "s")).version == 0
    assert (await store.list_session_ids("u")).session_ids == ()
    assert await store.client.zcard(store.layout.user_index("u")) == 0  # stale entry cleaned
    no_ttl = connect(STANDALONE, prefix=store.prefix)
    try:
        await no_ttl.save_if_version("u", "t", AgentState("t", "u"), 0)
        assert await store.client.pttl(no_ttl.layout.session("u", "t").head("agent_state")) == -1
    finally:
        await no_ttl.aclose()


async def test_cluster_orders_index_and_data(cluster_store: RedisAgentStateStore) -> None:
    """In a cluster the index is another slot: index, data, index on create; data, index on
    delete."""
    assert cluster_store.atomic_index is False
    proxy = Counting(cluster_store.client)
    store = RedisAgentStateStore(proxy, prefix=cluster_store.prefix, atomic_index=False)
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    assert proxy.names() in (["zadd", "evalsha", "zadd"], ["zadd", "eval", "zadd"])
    proxy.calls.clear()
    await store.save_if_version("u", "s", AgentState("s", "u"), 1)
    assert len(proxy.calls) == 1
    proxy.calls.clear()
    assert await store.delete("u", "s")
    assert proxy.names() in (["evalsha", "zrem", "exists"], ["eval", "zrem", "exists"])
    assert (await store.list_session_ids("u")).session_ids == ()


async def test_crash_orders_leave_only_stale_index_entries(
    topology_store: RedisAgentStateStore,
) -> None:
    store = topology_store
    index = store.layout.user_index("u")
    await store.save_if_version("u", "live", AgentState("live", "u"), 0)
    await store._index_add("u", "crashed-create")  # crash after the index write, before data
    await store.save_if_version("u", "crashed-delete", AgentState("crashed-delete", "u"), 0)
    sk = store.layout.session("u", "crashed-delete")
    await store.client.delete(sk.head("agent_state"), sk.keyset)  # crash before the index clean
    page = await store.list_session_ids("u", limit=1)
    assert page.session_ids == ("live",) and page.next_cursor is None
    assert await store.client.zrange(index, 0, -1) == [b"live"]
    # a create racing a delete's clean-up ends indexed
    await store.save_if_version("u", "racer", AgentState("racer", "u"), 0)
    await store._index_remove_checked("u", "racer")
    assert (await store.list_session_ids("u")).session_ids == ("live", "racer")


# ------------------------------------------------------------------ data, URLs, errors


async def test_corrupt_stored_data_is_a_typed_error(standalone_store: RedisAgentStateStore) -> None:
    store = standalone_store
    sk = store.layout.session("u", "s")
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    await store.client.hset(sk.head("agent_state"), "d", b"{not json")
    store.forget("u", "s")
    with pytest.raises(CorruptState):
        await store.get_versioned("u", "s")
    await store.client.hdel(sk.head("agent_state"), "g")
    with pytest.raises(CorruptState):
        await store.get_versioned("u", "s")
    await store.client.hset(sk.head("agent_state"), "g", 1)
    await store.client.rpush(sk.messages("agent_state"), b"junk")
    with pytest.raises(CorruptState):
        await connect(STANDALONE, prefix=store.prefix).get_versioned("u", "s")


async def _everything(store: RedisAgentStateStore) -> dict[bytes, bytes | None]:
    """Every key of the store's prefix with its DUMP: equal before and after = nothing written."""
    keys = [k async for k in store.client.scan_iter(match=f"{store.prefix}:*", count=1000)]
    return {k: await store.client.dump(k) for k in keys}


DAMAGE: dict[str, tuple[str, Any]] = {  # name -> (which key, what is done to it)
    "version not a number": ("head", ("hset", "v", "x")),
    "version missing": ("head", ("hdel", "v")),
    "version zero": ("head", ("hset", "v", "0")),
    "count not an int": ("head", ("hset", "n", "1.5")),
    "generation garbage": ("head", ("hset", "g", "1e999")),
    "chain missing": ("head", ("hdel", "c")),
    "head of another type": ("head", ("string",)),
    "gate epoch garbage": ("meta", ("hset", "ge", "x")),
    "fence epoch garbage": ("meta", ("hset", "fe", "-3")),
    "incarnation counter garbage": ("meta", ("hset", "i:agent_state", "x")),
    "generation counter garbage": ("meta", ("hset", "g:agent_state", "x")),
    "key set of another type": ("keyset", ("string",)),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_saves_over_damaged_keys_fail_closed_and_write_nothing(
    topology_store: RedisAgentStateStore, damage: str
) -> None:
    """A damaged head, counter or key type is CorruptState for every save: never read as 0."""
    store = topology_store
    sk = store.layout.session("u", "s")
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    which, action = DAMAGE[damage]
    key = {"head": sk.head("agent_state"), "meta": sk.meta, "keyset": sk.keyset}[which]
    if action[0] == "string":
        await store.client.delete(key)
        await store.client.set(key, "damaged")
    elif action[0] == "hdel":
        await store.client.hdel(key, action[1])
    else:
        await store.client.hset(key, action[1], action[2])
    before = await _everything(store)
    turn(state, 1)
    for expected in (0, 1, UNCONDITIONAL):
        for fence in (None, Fence(10**6, "me")):
            with pytest.raises(CorruptState):
                await store.save_if_version("u", "s", state, expected, fence=fence)
    assert await _everything(store) == before
    if which == "head" or damage.startswith("incarnation"):  # what loads read
        store.forget("u", "s")
        with pytest.raises(CorruptState):
            await store.get_versioned("u", "s")


async def test_a_session_index_of_another_type_fails_the_create_closed(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    await store.client.set(store.layout.user_index("u"), "damaged")
    before = await _everything(store)
    with pytest.raises(CorruptState):
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    assert await _everything(store) == before
    with pytest.raises(CorruptState):  # WRONGTYPE outside a script too
        await store.list_session_ids("u")


async def test_a_message_list_of_another_type_is_corrupt(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    key = store.layout.session("u", "s").messages("agent_state")
    await store.client.delete(key)
    await store.client.set(key, "damaged")
    store.forget("u", "s")
    with pytest.raises(CorruptState, match="wrong type"):
        await store.get_versioned("u", "s")


async def test_envelopes_stay_inert_data(standalone_store: RedisAgentStateStore) -> None:
    state = AgentState("s", "u")
    for i, env in enumerate(ENVELOPES):
        state.extensions[f"plugin{i}"] = orjson.loads(env)
        state.context.append(Msg.user(env, metadata={"env": orjson.loads(env)}))
    await standalone_store.save_if_version("u", "s", state, 0)
    got = await connect(STANDALONE, prefix=standalone_store.prefix).get_versioned("u", "s")
    assert got.state is not None
    assert got.state.extensions == state.extensions
    assert [m.metadata for m in got.state.context] == [m.metadata for m in state.context]


def test_urls_pick_the_topology() -> None:
    from redis.asyncio import Redis
    from redis.asyncio.cluster import RedisCluster

    s = connect("redis://127.0.0.1:6379/2?prefix=app:x&ttl=30&cache_slots=8")
    assert isinstance(s.client, Redis) and s.prefix == "app:x" and s.ttl_ms == 30000
    assert s.client.connection_pool.connection_kwargs["db"] == 2
    s = connect("rediss://:pw@localhost:6380/0")
    assert s.client.connection_pool.connection_kwargs["password"] == "pw"
    c = connect("redis+cluster://127.0.0.1:7000,127.0.0.1:7001/", prefix="p")
    assert isinstance(c.client, RedisCluster) and c.prefix == "p"
    t = connect("redis+sentinel://:secret@127.0.0.1:26379,[::1]:26380/mymaster/3")
    pool = t.client.connection_pool
    assert pool.service_name == "mymaster" and pool.connection_kwargs["db"] == 3
    assert pool.connection_kwargs["password"] == "secret"
    assert [
        (x.connection_pool.connection_kwargs["host"]) for x in pool.sentinel_manager.sentinels
    ] == ["127.0.0.1", "::1"]


TLS_FILES = {"ssl_ca_certs": "/etc/hk/ca.pem", "ssl_certfile": "/etc/hk/c.pem"}


def test_tls_urls_configure_tls_without_a_server() -> None:
    """rediss, rediss+cluster, rediss+sentinel: TLS connection classes, TLS files, passwords."""
    from redis.asyncio.connection import Connection, SSLConnection
    from redis.asyncio.sentinel import SentinelManagedConnection, SentinelManagedSSLConnection

    plain = connect("rediss://:pw@127.0.0.1:6380/1", client_options=TLS_FILES).client
    pool = plain.connection_pool
    # a subclass: socket writes bounded in-task (conn.py), everything else SSLConnection's
    assert issubclass(pool.connection_class, SSLConnection)
    assert pool.connection_kwargs["password"] == "pw" and pool.connection_kwargs["db"] == 1
    assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/hk/ca.pem"

    for scheme, cls in (("redis+cluster", Connection), ("rediss+cluster", SSLConnection)):
        opts = {"client_options": TLS_FILES} if cls is SSLConnection else {}
        cluster = connect(f"{scheme}://me:pw@127.0.0.1:7000,127.0.0.1:7001/", **opts).client
        kwargs = cluster.connection_kwargs
        assert kwargs["connection_class"] is cls
        assert (kwargs["username"], kwargs["password"]) == ("me", "pw")
        assert [(n.host, n.port) for n in cluster.startup_nodes] == [
            ("127.0.0.1", 7000),
            ("127.0.0.1", 7001),
        ]
        if cls is SSLConnection:
            assert kwargs["ssl_certfile"] == "/etc/hk/c.pem"

    for scheme, data_cls, sentinel_cls in (
        ("redis+sentinel", SentinelManagedConnection, Connection),
        ("rediss+sentinel", SentinelManagedSSLConnection, SSLConnection),
    ):
        tls = data_cls is SentinelManagedSSLConnection
        store = connect(
            f"{scheme}://:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/2?sentinel_password=s%40pw",
            client_options=TLS_FILES if tls else {},
        )
        pool = store.client.connection_pool
        assert issubclass(pool.connection_class, data_cls) and pool.service_name == "mymaster"
        assert pool.connection_kwargs["password"] == "pw" and pool.connection_kwargs["db"] == 2
        sentinels = [x.connection_pool for x in pool.sentinel_manager.sentinels]
        assert [p.connection_kwargs["port"] for p in sentinels] == [26379, 26380]
        for p in sentinels:  # the sentinels' password, never the data nodes'
            assert p.connection_class is sentinel_cls
            assert p.connection_kwargs["password"] == "s@pw"
            if tls:  # the sentinels get the same TLS files as the data nodes
                assert p.connection_kwargs["ssl_ca_certs"] == "/etc/hk/ca.pem"
                assert p.connection_kwargs["ssl_certfile"] == "/etc/hk/c.pem"
        if tls:
            assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/hk/ca.pem"
    no_password = connect("redis+sentinel://127.0.0.1:26379/mymaster").client.connection_pool
    assert (
        no_password.sentinel_manager.sentinels[0].connection_pool.connection_kwargs["password"]
        is None
    )


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("memcached://x", {}),
        ("redis://localhost?prefix=a{b}", {}),
        ("redis://localhost", {"prefix": "a*"}),
        ("redis://localhost", {"prefix": ""}),
        ("redis://localhost", {"bogus": 1}),
        ("redis://localhost?ttl=abc", {}),
        ("redis+sentinel://127.0.0.1:26379/", {}),
        ("redis+sentinel://127.0.0.1:26379/m/x", {}),
        ("redis+cluster://127.0.0.1:x/", {}),
        ("redis+cluster:///", {}),
    ],
)
def test_bad_configuration_is_refused(url: str, options: dict[str, Any]) -> None:
    with pytest.raises(StoreConfigurationError):
        connect(url, **options)


TOPOLOGY_URLS = (
    "redis://127.0.0.1:6379/0",
    "redis+cluster://127.0.0.1:7000/",
    "redis+sentinel://127.0.0.1:26379/mymaster/0",
)
BAD_OPTION_VALUES: list[tuple[str, dict[str, Any]]] = [
    ("ttl=-5", {}),
    ("ttl=nan", {}),
    ("ttl=inf", {}),
    ("ttl=1e300", {}),
    ("", {"ttl": "x"}),
    ("", {"ttl": 0}),
    ("", {"ttl": True}),
    ("", {"ttl": float("nan")}),
    ("cache_slots=-1", {}),
    ("cache_slots=x", {}),
    ("", {"cache_slots": "x"}),
    ("", {"cache_slots": 1.5}),
    ("", {"cache_slots": True}),
    ("", {"client_options": 5}),
    ("", {"client_options": "socket_timeout=1"}),
]


@pytest.mark.parametrize("url", TOPOLOGY_URLS)
@pytest.mark.parametrize(("query", "options"), BAD_OPTION_VALUES)
def test_bad_option_values_are_refused_on_every_topology(
    url: str, query: str, options: dict[str, Any]
) -> None:
    with pytest.raises(StoreConfigurationError, match=r"ttl|cache_slots|client_options"):
        connect(f"{url}?{query}" if query else url, **options)


def test_bad_option_values_are_refused_by_the_constructor() -> None:
    client = redis.asyncio.Redis()
    for options in ({"ttl": -1}, {"ttl": "x"}, {"cache_slots": -1}, {"seen_slots": "x"}):
        with pytest.raises(StoreConfigurationError):
            RedisAgentStateStore(client, **options)  # type: ignore[arg-type]
    assert RedisAgentStateStore(client, ttl=1e-9, cache_slots=0).ttl_ms == 1


@pytest.mark.parametrize(
    ("url", "options", "named"),
    [
        ("redis://127.0.0.1:6379/14?foo=bar", {}, "foo"),
        ("redis://127.0.0.1:6379/14?timeout=3", {}, "timeout"),  # a pool option redis-py parses
        ("redis://127.0.0.1:6379/14?decode_responses=false", {}, "decode_responses"),
        ("redis://127.0.0.1:6379/14", {"client_options": {"bogus": 1}}, "bogus"),
        ("redis://127.0.0.1:6379/14", {"client_options": {"ssl_ca_certs": "/ca"}}, "ssl_ca_certs"),
        ("rediss://127.0.0.1:6379/14", {"client_options": {"bogus": 1}}, "bogus"),
        ("redis+cluster://127.0.0.1:7000/", {"client_options": {"bogus": 1}}, "bogus"),
        ("redis+sentinel://127.0.0.1:26379/m/0", {"client_options": {"bogus": 1}}, "bogus"),
        ("rediss+sentinel://127.0.0.1:26379/m/0", {"client_options": {"bogus": 1}}, "bogus"),
        ("redis://127.0.0.1:6379/14", {"client_options": {"socket_timeout": "5"}}, "timeout"),
        ("redis+cluster://h:1/", {"client_options": {"socket_connect_timeout": 0}}, "timeout"),
    ],
)
def test_unknown_client_options_are_refused_when_the_store_is_built(
    url: str, options: dict[str, Any], named: str
) -> None:
    with pytest.raises(StoreConfigurationError, match=named):
        connect(url, **options)


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/abc",
        "redis://127.0.0.1:6379/-1",
        "redis://127.0.0.1:6379/1/2",
        "redis://127.0.0.1:6379//",
        "redis://127.0.0.1:6379/0?db=x",
        "redis://127.0.0.1:6379/0?db=-2",
        "redis+cluster://127.0.0.1:7000/5",
        "redis+cluster://127.0.0.1:7000/0",
        "redis+sentinel://127.0.0.1:26379/mymaster/-1",
        "unix:///tmp/redis.sock",
        "redis://127.0.0.1:6379/0?sentinel_password=x",
        "redis+cluster://127.0.0.1:7000/?sentinel_password=x",
    ],
)
def test_url_parts_that_would_be_ignored_are_refused(url: str) -> None:
    with pytest.raises(StoreConfigurationError):
        connect(url)


def test_database_forms() -> None:
    db = [
        connect(u).client.connection_pool.connection_kwargs.get("db", 0)
        for u in ("redis://h", "redis://h/", "redis://h/7", "redis://h/7/", "redis://h/1?db=3")
    ]
    assert db == [0, 0, 7, 7, 3]
    with pytest.raises(StoreConfigurationError, match="database"):
        connect("redis://h", client_options={"db": -1})
    assert isinstance(connect("redis+cluster://127.0.0.1:7000").client, RedisCluster)


async def test_known_client_options_pass() -> None:
    stores = [
        connect(
            f"{STANDALONE}?socket_timeout=3&health_check_interval=2&client_name=hk&max_connections=4",
            prefix=new_prefix(),
        ),
        connect(
            STANDALONE,
            prefix=new_prefix(),
            client_options={"single_connection_client": True, "decode_responses": True},
        ),
        connect("rediss://127.0.0.1:6379/0?ssl_ca_certs=/ca.pem&ssl_cert_reqs=required"),
    ]
    try:
        for store in stores[:2]:
            assert await store.get_versioned("u", "s") == Versioned(None, 0)
        kwargs = stores[0].client.connection_pool.connection_kwargs
        assert (kwargs["socket_timeout"], kwargs["client_name"]) == (3.0, "hk")
        assert stores[2].client.connection_pool.connection_kwargs["ssl_ca_certs"] == "/ca.pem"
    finally:
        for store in stores:
            await store.aclose()


async def test_a_client_option_of_the_wrong_type_is_a_configuration_error() -> None:
    """redis-py only uses the value on connect: the TypeError it raises is typed, not leaked."""
    store = connect(STANDALONE, prefix=new_prefix(), client_options={"health_check_interval": "5"})
    try:
        with pytest.raises(StoreConfigurationError, match="rejected its configuration"):
            await store.get_versioned("u", "s")
    finally:
        await store.aclose()


async def test_unreachable_server_is_store_unavailable() -> None:
    store = connect(
        f"redis://127.0.0.1:{free_port()}/0", client_options={"socket_connect_timeout": 0.5}
    )
    try:
        with pytest.raises(StoreUnavailable):
            await store.get_versioned("u", "s")
        with pytest.raises(StoreUnavailable):
            await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    finally:
        await store.aclose()


async def test_bad_arguments(standalone_store: RedisAgentStateStore) -> None:
    store, state = standalone_store, AgentState("s", "u")
    with pytest.raises(InvalidStoreArgument, match="fence"):
        await store.save_if_version("u", "s", state, 0, fence=(1, "x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidStoreArgument, match="expected_version"):
        await store.save_if_version("u", "s", state, True)  # type: ignore[arg-type]
    with pytest.raises(InvalidStoreArgument, match="cursor"):
        await store.list_session_ids("u", cursor=3)  # type: ignore[arg-type]
    assert not await store.exists("u", "s")
    # an empty cursor is the first page, as None is
    for sid in ("a", "b"):
        await store.save_if_version("u", sid, AgentState(sid, "u"), 0)
    assert (await store.list_session_ids("u", cursor="")).session_ids == ("a", "b")


def test_entry_point_registers_every_scheme() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="hookagent") if e.name == "store-redis"]
    registered: dict[str, Any] = {}
    ep.load().hookagent_register_state_stores(register=lambda k, f: registered.__setitem__(k, f))
    assert set(registered) == {
        "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel"
    }  # fmt: skip
    assert isinstance(registered["redis"](STANDALONE), RedisAgentStateStore)


async def test_killed_connections_are_transparent(standalone_store: RedisAgentStateStore) -> None:
    """CLIENT KILL between calls: the driver reconnects; a save replayed by it is applied once."""
    name = standalone_store.prefix
    store = connect(STANDALONE, prefix=name, client_options={"client_name": name})
    admin = standalone_store.client
    try:
        state = AgentState("s", "u")
        for i in range(3):
            turn(state, i)
            await store.save_if_version("u", "s", state, i)
            for entry in await admin.client_list():
                if entry.get("name") == name:
                    await admin.client_kill_filter(_id=entry["id"])
            got = await store.get_versioned("u", "s")
            assert got.version == i + 1 and len(got.state.context) == 4 * (i + 1)  # type: ignore[union-attr]
    finally:
        await store.aclose()


class LosesReplies:
    """A client proxy that runs the next save, then 'loses the reply' (ConnectionError)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.armed = False
        self.meanwhile: Any = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("evalsha", "eval"):
            return attr

        async def call(*args: Any) -> Any:
            result = await attr(*args)
            if self.armed and len(args) > 8:  # a save
                self.armed = False
                if self.meanwhile is not None:
                    await self.meanwhile()
                raise redis.exceptions.ConnectionError("reply lost")
            return result

        return call


async def test_lost_reply_save_is_retried_once_and_applied_once(
    standalone_store: RedisAgentStateStore,
) -> None:
    proxy = LosesReplies(standalone_store.client)
    store = RedisAgentStateStore(proxy, prefix=standalone_store.prefix)
    state = AgentState("s", "u")
    await store.save_if_version("u", "s", state, 0)
    turn(state, 0)
    proxy.armed = True
    assert await store.save_if_version("u", "s", state, 1) == 2  # re-sent, replay detected
    got = await standalone_store.get_versioned("u", "s")
    assert got.version == 2 and len(got.state.context) == 4  # type: ignore[union-attr]
    # the reply is lost AND another writer wrote before the re-send: outcome unknown, typed
    turn(state, 1)
    other = connect(STANDALONE, prefix=standalone_store.prefix)

    async def meanwhile() -> None:
        fresh = await other.get_versioned("u", "s")
        await other.save_if_version("u", "s", fresh.state, fresh.version)  # type: ignore[arg-type]

    proxy.armed, proxy.meanwhile = True, meanwhile
    try:
        with pytest.raises(StoreUnavailable, match="outcome is unknown"):
            await store.save_if_version("u", "s", state, 2)
    finally:
        await other.aclose()
    got = await standalone_store.get_versioned("u", "s")
    assert got.version == 4 and len(got.state.context) == 8  # ours, then the other's (no dup)


async def test_url_clients_carry_their_driver_info() -> None:
    """redis-py would otherwise read its version from package metadata on first connect."""
    store = connect(STANDALONE, prefix=new_prefix())
    try:
        kwargs = store.client.connection_pool.connection_kwargs
        info = kwargs.get("driver_info")
        assert info is not None and info.lib_version == redis.__version__
        assert "hookagent" in info.formatted_name
    finally:
        await store.aclose()
    mine = connect(STANDALONE, prefix=new_prefix(), client_options={"lib_name": None})
    try:
        assert "driver_info" not in mine.client.connection_pool.connection_kwargs
    finally:
        await mine.aclose()


async def test_clients_decoding_responses_load_the_same() -> None:
    """A client made with decode_responses=True answers str: loads still work."""
    plain = connect(STANDALONE, prefix=new_prefix())
    texty = RedisAgentStateStore(
        redis.asyncio.Redis.from_url(STANDALONE, decode_responses=True), prefix=plain.prefix
    )
    try:
        state = AgentState("s", "u")
        turn(state, 0)
        await plain.save_if_version("u", "s", state, 0)
        got = await texty.get_versioned("u", "s")
        assert got.state is not None and got.state.context == state.context
    finally:
        await delete_prefix(plain.client, plain.prefix)
        await texty.aclose()
        await plain.aclose()
