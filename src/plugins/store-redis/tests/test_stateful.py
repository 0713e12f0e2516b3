"""Differential test: random operation sequences on two Redis store instances sharing one
prefix (so caches meet each other's writes) against the kernel's in-memory store."""

from __future__ import annotations

import asyncio
from typing import Any

from hookagent import AgentState, Msg
from hookagent.errors import VersionConflict
from hookagent.store import UNCONDITIONAL, InMemoryAgentStateStore
from hookagent_store_redis import connect
from hookagent_store_redis.testing import STANDALONE, delete_prefix, new_prefix
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

USERS = st.sampled_from(["a", "a*", "", "{x}"])
SESSIONS = st.sampled_from(["s", "s:1", "*"])
KEYS = st.sampled_from(["agent_state", "obs"])
EDITS = st.sampled_from(["append", "append_many", "pop_append", "edit_first", "clear", "summary"])


def make(how: str, n: int) -> list[Msg]:
    """The messages an edit adds, made once so both stores get identical ones (ids, times)."""
    if how == "append_many":
        return [Msg.assistant(f"m{n}.{i}") for i in range(5)]
    return [Msg.user(f"{how}{n}")]


def edit(state: AgentState, how: str, n: int, new: list[Msg]) -> None:
    if how in ("append", "append_many"):
        state.context.extend(new)
    elif how == "pop_append" and state.context:
        state.context.pop()
        state.context.extend(new)
    elif how == "edit_first" and state.context:
        state.context[0] = new[0]
    elif how == "clear":
        state.clear_context()
        state.context.extend(new)
    else:
        state.summary = f"sum{n}"


class Differential(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.prefix = new_prefix()
        self.redis = [connect(STANDALONE, prefix=self.prefix) for _ in range(2)]
        self.model = InMemoryAgentStateStore()
        self.n = 0

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def both(self, fn: Any) -> tuple[Any, Any]:
        out = []
        for store in (self.redis[0], self.model):
            try:
                out.append(("ok", await fn(store)))
            except VersionConflict as exc:
                out.append(("conflict", exc.actual))
        return out[0], out[1]

    @rule(i=st.integers(0, 1), u=USERS, s=SESSIONS, k=KEYS, how=EDITS)
    def save(self, i: int, u: str, s: str, k: str, how: str) -> None:
        self.n += 1
        got_r = self.run(self.redis[i].get_versioned(u, s, k))
        got_m = self.run(self.model.get_versioned(u, s, k))
        assert got_r.version == got_m.version
        sr, sm = got_r.state or AgentState(s, u), got_m.state or AgentState(s, u)
        new = make(how, self.n)
        edit(sr, how, self.n, new)
        edit(sm, how, self.n, new)
        vr = self.run(self.redis[i].save_if_version(u, s, sr, got_r.version, key=k))
        vm = self.run(self.model.save_if_version(u, s, sm, got_m.version, key=k))
        assert vr == vm

    @rule(u=USERS, s=SESSIONS, k=KEYS, delta=st.sampled_from([-1, 1, 5]))
    def stale_save(self, u: str, s: str, k: str, delta: int) -> None:
        async def go(store: Any) -> Any:
            v = (await self.model.get_versioned(u, s, k)).version + delta
            if v < 0:
                return None
            return await store.save_if_version(u, s, AgentState(s, u, "stale"), v, key=k)

        r, m = self.run(self.both(go))
        assert r[0] == m[0] == ("ok" if r[1] is None and m[1] is None else "conflict")

    @rule(i=st.integers(0, 1), u=USERS, s=SESSIONS, k=KEYS)
    def unconditional(self, i: int, u: str, s: str, k: str) -> None:
        self.n += 1
        vr = self.run(
            self.redis[i].save_if_version(
                u, s, AgentState(s, u, f"o{self.n}"), UNCONDITIONAL, key=k
            )
        )
        vm = self.run(
            self.model.save_if_version(u, s, AgentState(s, u, f"o{self.n}"), UNCONDITIONAL, key=k)
        )
        assert vr == vm

    @rule(i=st.integers(0, 1), u=USERS, s=SESSIONS, k=st.one_of(st.none(), KEYS))
    def delete(self, i: int, u: str, s: str, k: str | None) -> None:
        assert self.run(self.redis[i].delete(u, s, k)) == self.run(self.model.delete(u, s, k))

    @invariant()
    def same_everywhere(self) -> None:
        for u in ("a", "a*", "", "{x}"):
            ids_m = self.run(_all(self.model, u))
            for r in self.redis:
                assert self.run(_all(r, u)) == ids_m
            for s in ids_m:
                for k in ("agent_state", "obs"):
                    m = self.run(self.model.get_versioned(u, s, k))
                    for r in self.redis:
                        got = self.run(r.get_versioned(u, s, k))
                        assert got.version == m.version
                        assert (got.state is None) == (m.state is None)
                        if m.state is not None:
                            assert got.state.to_json() == m.state.to_json()  # type: ignore[union-attr]

    def teardown(self) -> None:
        async def close() -> None:
            await delete_prefix(self.redis[0].client, self.prefix)
            for r in self.redis:
                await r.aclose()

        self.run(close())
        self.loop.close()


async def _all(store: Any, user: str) -> list[str]:
    out: list[str] = []
    cursor = None
    while True:
        page = await store.list_session_ids(user, limit=2, cursor=cursor)
        out += page.session_ids
        cursor = page.next_cursor
        if cursor is None:
            return sorted(out)


TestDifferential = Differential.TestCase
TestDifferential.settings = settings(
    max_examples=12,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
