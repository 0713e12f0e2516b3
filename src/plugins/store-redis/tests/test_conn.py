"""The fast-write connection class (conn.py): no task per command, the same timeout."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
import redis
from hookagent import AgentState, Msg
from hookagent_store_redis import connect
from hookagent_store_redis.conn import fast_writes
from hookagent_store_redis.testing import STANDALONE, delete_prefix, new_prefix
from redis.asyncio.connection import Connection

pytestmark = pytest.mark.anyio

PY311 = sys.version_info < (3, 12)  # 3.12's wait_for makes no task: the class is not swapped


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_warm_load_and_save_create_no_task() -> None:
    """redis-py's wait_for around each socket write runs it in a new task on 3.11."""
    store = connect(STANDALONE, prefix=new_prefix())
    loop = asyncio.get_running_loop()
    made: list[Any] = []
    old = loop.get_task_factory()

    def factory(lp: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        made.append(coro)
        return asyncio.Task(coro, loop=lp, **kw)

    try:
        state = AgentState("s", "u")
        state.context.append(Msg.user("hi"))
        await store.save_if_version("u", "s", state, 0)
        got = await store.get_versioned("u", "s")
        loop.set_task_factory(factory)
        for i in range(5):
            assert got.state is not None
            got.state.context.append(Msg.user(f"m{i}"))
            await store.save_if_version("u", "s", got.state, got.version)
            got = await store.get_versioned("u", "s")
        loop.set_task_factory(old)
        assert got.version == 6
        if PY311:
            assert issubclass(store.client.connection_pool.connection_class, Connection)
            assert made == []  # redis-py's own class makes two per load + save here
    finally:
        loop.set_task_factory(old)
        await delete_prefix(store.client, store.prefix)
        await store.aclose()


async def test_a_stalled_write_times_out_and_drops_the_connection() -> None:
    """A server that stops reading: the write is bounded by socket_timeout as in redis-py
    (redis TimeoutError, the connection closed), without a task of its own."""

    async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    server = await asyncio.start_server(never_read, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    cls = fast_writes(Connection)
    conn = cls(host="127.0.0.1", port=port, socket_timeout=0.3)
    try:
        # connected by hand: redis-py's connect would wait for the handshake's replies
        conn._reader, conn._writer = await asyncio.open_connection("127.0.0.1", port)
        assert conn.is_connected
        with pytest.raises(redis.exceptions.TimeoutError, match="Timeout writing to socket"):
            await conn.send_packed_command([b"x" * (64 << 20)], check_health=False)
        assert not conn.is_connected
    finally:
        await conn.disconnect()
        server.close()
