"""Stored counters near the limits of Lua's numbers: doubles, printed by tostring as %.14g."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import AgentState, Msg
from hookagent_store_redis import RedisAgentStateStore, connect
from hookagent_store_redis.testing import STANDALONE, delete_prefix, new_prefix

pytestmark = pytest.mark.anyio


class Answers:
    """A client proxy that keeps the replies of the scripts the store runs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.replies: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("evalsha", "eval"):
            return attr

        async def call(*args: Any) -> Any:
            self.replies.append(await attr(*args))
            return self.replies[-1]

        return call


@pytest.mark.parametrize("counter", [10**14 - 1, 2**53 - 2])
async def test_counters_past_1e14_compare_as_numbers(counter: int) -> None:
    """An incarnation or generation of 1e14 prints as "1e+14" in Lua: compared as text with
    the store's "100000000000000" it made a save a false VersionRegression and every warm
    load a full read."""
    plain = connect(STANDALONE, prefix=new_prefix())
    proxy = Answers(plain.client)
    store = RedisAgentStateStore(proxy, prefix=plain.prefix)
    sk = store.layout.session("u", "s")
    try:
        await plain.client.hset(
            sk.meta, mapping={"i:agent_state": counter, "g:agent_state": counter}
        )
        state = AgentState("s", "u", context=[Msg.user("first")])
        v = await store.save_if_version("u", "s", state, 0)
        got = await store.get_versioned("u", "s")  # this instance now saw incarnation counter+1
        assert got.state is not None and got.version == v == 1
        head = await plain.client.hmget(sk.head("agent_state"), "i", "g")
        assert [int(x) for x in head] == [counter + 1, counter + 1]
        got.state.context.append(Msg.user("second"))
        v = await store.save_if_version("u", "s", got.state, got.version)  # checks incarnation
        proxy.replies.clear()
        got = await store.get_versioned("u", "s")  # warm: the cached generation still holds
        assert got.version == v == 2 and [m.text for m in got.state.context] == ["first", "second"]  # type: ignore[union-attr]
        assert proxy.replies[0][9] == b""  # head only: nothing re-read
    finally:
        await delete_prefix(plain.client, plain.prefix)
        await plain.aclose()
