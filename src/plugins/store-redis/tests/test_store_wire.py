"""The state store's load and save scripts on held connections (logwire's ``Wire``): the
bytes of a warm call are redis-py's, a warm call takes no connection from the pool, a
killed or interrupted connection is replaced and never reused, a save whose reply was lost
is re-sent and applied once, and a cluster client keeps redis-py's path."""

from __future__ import annotations

from typing import Any

import pytest
import redis.exceptions
from hookagent import AgentState, Msg
from hookagent.codec import encode_msg
from hookagent.state import SCHEMA_VERSION
from hookagent.store.ids import encode_id
from hookagent_store_redis import RedisAgentStateStore, connect
from hookagent_store_redis import store as store_mod
from hookagent_store_redis.testing import ClusterInfo, delete_prefix, new_prefix

pytestmark = pytest.mark.anyio
CLIENT_ID = [b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n"]


@pytest.fixture
def store(held_store: RedisAgentStateStore) -> RedisAgentStateStore:
    """Standalone and Sentinel (conftest): the store's scripts on held connections."""
    return held_store


def turn(state: AgentState, i: int) -> list[Msg]:
    new = [Msg.user(f"u{i} é"), Msg.assistant(f"c{i}"), Msg("tool", f"r{i}"), Msg.assistant("a")]
    state.context.extend(new)
    return new


def parse(buffers: list[bytes]) -> list[bytes]:
    """A RESP array of bulk strings back into its items (checks the framing exactly)."""
    data = b"".join(buffers)
    assert data[:1] == b"*"
    head, rest = data[1:].split(b"\r\n", 1)
    items = []
    for _ in range(int(head)):
        assert rest[:1] == b"$"
        size, rest = rest[1:].split(b"\r\n", 1)
        items.append(rest[: int(size)])
        assert rest[int(size) : int(size) + 2] == b"\r\n"
        rest = rest[int(size) + 2 :]
    assert rest == b""
    return items


async def test_a_warm_save_and_load_send_exactly_these_bytes(
    store: RedisAgentStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = store._wire
    assert wire is not None
    state = AgentState("s:é", "u")
    turn(state, 0)
    await store.save_if_version("u", "s:é", state, 0)
    got = await store.get_versioned("u", "s:é")
    assert got.state is not None
    sent: list[list[bytes]] = []
    real = wire.call

    async def spy(buffers: list[bytes]) -> Any:
        sent.append(buffers)
        return await real(buffers)

    sk, kname = store.layout.session("u", "s:é"), encode_id("agent_state")
    first_write = await store.client.hget(sk.head(kname), "w")
    monkeypatch.setattr(wire, "call", spy)
    monkeypatch.setattr(store_mod.secrets, "token_hex", lambda n: "ab" * n)
    new = turn(got.state, 1)
    assert await store.save_if_version("u", "s:é", got.state, got.version) == 2
    again = await store.get_versioned("u", "s:é")
    assert again.version == 2 and again.state is not None and len(again.state.context) == 8
    save, load = (parse(b) for b in sent)
    conn = store.client.connection_pool.make_connection()
    for buffers, items in zip(sent, (save, load), strict=True):  # redis-py's own encoding
        assert b"".join(buffers) == b"".join(conn.pack_command(*items))
    keys = [sk.head(kname), sk.messages(kname), sk.keyset, sk.meta, store.layout.user_index("u")]
    seen = [b"1", b"1", first_write]
    assert save == [
        b"EVALSHA", store_mod._SAVE.sha.encode(), b"5", *(k.encode() for k in keys),
        b"1", b"a", b"4", b"", b"", save[13], b"0", kname.encode(), b"ab" * 8, *seen,
        encode_id("s:é").encode(), str(SCHEMA_VERSION).encode(), b"u", "s:é".encode(),
        *(encode_msg(m) for m in new),
    ]  # fmt: skip
    assert save[13] == encode_head_of(got.state)
    assert load == [
        b"EVALSHA", store_mod._LOAD.sha.encode(), b"4", *(k.encode() for k in keys[:4]),
        b"1", b"8", b"0", kname.encode(), b"1", b"2", b"ab" * 8, b"ab" * 8,
    ]  # fmt: skip


def encode_head_of(state: AgentState) -> bytes:
    from hookagent.codec import encode_head

    return encode_head(state)


async def test_warm_calls_take_no_connection_from_the_pool(store: RedisAgentStateStore) -> None:
    state = AgentState("s", "u")
    await store.save_if_version("u", "s", state, 0)
    pool = store.client.connection_pool
    taken: list[int] = []
    real = pool.get_connection

    async def counting(*a: Any, **kw: Any) -> Any:
        taken.append(1)
        return await real(*a, **kw)

    pool.get_connection = counting
    try:
        for i in range(3):
            got = await store.get_versioned("u", "s")
            assert got.state is not None
            turn(got.state, i)
            await store.save_if_version("u", "s", got.state, got.version)
    finally:
        del pool.get_connection
    assert taken == [] and store._wire is not None and len(store._wire.idle) == 1
    assert len(pool._in_use_connections) == 1  # type: ignore[attr-defined]
    await store._wire.aclose()  # aclose gives it back, owned client or not
    assert len(pool._in_use_connections) == 0  # type: ignore[attr-defined]


async def test_a_killed_held_connection_is_replaced_and_the_load_resent(
    store: RedisAgentStateStore,
) -> None:
    wire = store._wire
    assert wire is not None
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    first = await wire.call(CLIENT_ID)
    await store.client.execute_command("CLIENT", "KILL", "ID", first)
    got = await store.get_versioned("u", "s")  # finds the socket closed: re-sent once
    assert got.version == 1 and got.state is not None and len(got.state.context) == 4
    assert int(await wire.call(CLIENT_ID)) != int(first) and len(wire.idle) == 1


async def test_a_save_whose_reply_is_lost_is_resent_and_applied_once(
    store: RedisAgentStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = store._wire
    assert wire is not None
    state = AgentState("s", "u")
    await store.save_if_version("u", "s", state, 0)
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    held = wire.idle[0]
    real = held.read_response

    async def lose(*a: Any, **kw: Any) -> Any:
        await real(*a, **kw)  # the save ran on the server; its answer never arrives
        monkeypatch.undo()
        raise redis.exceptions.ConnectionError("reply lost")

    monkeypatch.setattr(held, "read_response", lose)
    turn(got.state, 0)
    assert await store.save_if_version("u", "s", got.state, got.version) == 2  # a replay
    store.forget("u", "s")
    final = await store.get_versioned("u", "s")  # applied once: 4 messages, version 2
    assert final.version == 2 and final.state is not None and len(final.state.context) == 4


async def test_a_save_interrupted_mid_reply_drops_its_connection(
    store: RedisAgentStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = store._wire
    assert wire is not None
    state = AgentState("s", "u")
    await store.save_if_version("u", "s", state, 0)
    held = wire.idle[0]

    async def cut(*a: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt  # a BaseException after the command was sent

    monkeypatch.setattr(held, "read_response", cut)
    turn(state, 0)
    with pytest.raises(KeyboardInterrupt):
        await store.save_if_version("u", "s", state, 1)
    assert wire.idle == [] and not held.is_connected  # its reply is unread: never reused
    monkeypatch.undo()
    store.forget("u", "s")
    got = await store.get_versioned("u", "s")  # on a new connection; the save had run
    assert got.version == 2 and got.state is not None and len(got.state.context) == 4


async def test_a_client_passed_in_keeps_redis_py_s_path(store: RedisAgentStateStore) -> None:
    """Held connections stay checked out until ``aclose``: a store dropped unclosed over a
    shared client would keep them from its pool for good, so only an owned client is held."""
    shared = RedisAgentStateStore(store.client, prefix=store.prefix)
    assert shared._wire is None and store._wire is not None
    state = AgentState("s", "u")
    turn(state, 0)
    await shared.save_if_version("u", "s", state, 0)
    pool = store.client.connection_pool
    in_use = len(pool._in_use_connections)  # type: ignore[attr-defined]
    assert (await shared.get_versioned("u", "s")).version == 1
    assert len(pool._in_use_connections) == in_use  # type: ignore[attr-defined]


async def test_a_cluster_client_keeps_redis_py_s_path(redis_cluster: ClusterInfo) -> None:
    cluster = connect(redis_cluster.url, prefix=new_prefix())
    try:
        assert cluster._wire is None
        state = AgentState("s", "u")
        turn(state, 0)
        await cluster.save_if_version("u", "s", state, 0)
        assert (await cluster.get_versioned("u", "s")).version == 1
    finally:
        await delete_prefix(cluster.client, cluster.prefix)
        await cluster.aclose()
