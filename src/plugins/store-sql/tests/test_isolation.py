"""G12 containment and G14 tenant isolation, on every dialect.

G12: after the whole hostile id corpus (SQL-looking ids included) has gone through every
method, the only user_ids in any table are the ones used, and nothing else changed.
G14: tenant B reaches none of tenant A's slots through any method, with A's session ids
and with crafted look-alike ids (case, trailing space, LIKE and glob metacharacters).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hookagent.errors import Fenced, VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store import Fence
from hookagent.testing.corpus import HOSTILE_IDS
from sqlalchemy import func, select
from sqlenv import DIALECTS, fresh_store

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=DIALECTS)
async def store(request, tmp_path: Path):
    async with fresh_store(request.param, tmp_path) as s:
        yield s


def _state(user: str, sid: str, *texts: str) -> AgentState:
    state = AgentState(sid, user, summary=f"{user}|{sid}")
    state.context.extend(Msg.user(t) for t in texts)
    return state


async def _distinct_users(store, table) -> set[str]:
    async with store.engine.connect() as conn:
        return {r[0] for r in await conn.execute(select(table.c.user_id).distinct())}


async def test_hostile_ids_touch_only_their_own_rows(store) -> None:
    users = [*HOSTILE_IDS, ""]
    for i, uid in enumerate(users):
        sid = HOSTILE_IDS[(i + 7) % len(HOSTILE_IDS)]
        key = uid or "k"
        v = await store.save_if_version(
            uid, sid, _state(uid, sid, "a", "b"), 0, fence=Fence(1, uid)
        )
        assert await store.save_if_version(uid, sid, _state(uid, sid, "x"), 0, key=key) == 1
        got = await store.get_versioned(uid, sid)
        got.state.context.append(Msg.assistant(uid))
        assert await store.save_if_version(uid, sid, got.state, v, fence=Fence(1, uid)) == 2
        assert await store.exists(uid, sid) and await store.exists(uid, sid, key=key)
        assert (await store.list_session_ids(uid)).session_ids == (sid,)
        # a second session that is then deleted with every key
        await store.save_if_version(uid, uid or "anon", _state(uid, uid or "anon", "gone"), 0)
        assert await store.delete(uid, uid or "anon")
        assert await store.delete(uid, sid, key=key)
    t = store.tables
    assert await _distinct_users(store, t.slots) == set(users)
    assert await _distinct_users(store, t.chunks) == set(users)
    assert await _distinct_users(store, t.fences) == set(users)
    async with store.engine.connect() as conn:
        slots = (await conn.execute(select(func.count()).select_from(t.slots))).scalar()
        msgs = (await conn.execute(select(func.sum(t.chunks.c.n)))).scalar()
        rows = (await conn.execute(select(func.count()).select_from(t.messages))).scalar()
    assert slots == len(users) and msgs == 3 * len(users) and rows == 0
    for i, uid in enumerate(users):
        sid = HOSTILE_IDS[(i + 7) % len(HOSTILE_IDS)]
        got = await store.get_versioned(uid, sid)
        assert got.version == 2 and [m.text for m in got.state.context] == ["a", "b", uid]
        assert got.state.summary == f"{uid}|{sid}"


LOOKALIKES = (
    "b",
    "Alice",
    "alice ",
    "alic",
    "alice%",
    "alic_",
    "*",
    "",
    "alice' OR '1'='1",
)


async def test_tenant_b_reaches_nothing_of_tenant_a(store) -> None:
    a_sessions = ["s1", "s%", "' OR 1=1 --"]
    for sid in a_sessions:
        await store.save_if_version(
            "alice", sid, _state("alice", sid, "secret"), 0, fence=Fence(5, "lease-a")
        )
        await store.save_if_version(
            "alice", sid, _state("alice", sid, "obs"), 0, key="observations"
        )
    for bob in LOOKALIKES:
        for sid in a_sessions:
            for key in ("agent_state", "observations"):
                got = await store.get_versioned(bob, sid, key)
                assert got.version == 0 and got.state is None, (bob, sid)
                assert not await store.exists(bob, sid, key)
                assert not await store.delete(bob, sid, key)
                with pytest.raises(VersionConflict) as err:
                    await store.save_if_version(bob, sid, _state(bob, sid, "evil"), 1, key=key)
                assert err.value.actual in (0, None)
            assert not await store.delete(bob, sid)
        assert (await store.list_session_ids(bob)).session_ids == ()
        assert (await store.list_session_ids(bob, cursor="")).session_ids == ()
        # bob's own fence and slot live beside alice's and do not touch them
        sid = a_sessions[0]
        assert (
            await store.save_if_version(bob, sid, _state(bob, sid, "b"), 0, fence=Fence(0, "b"))
            == 1
        )
        assert await store.delete(bob, sid)
    for sid in a_sessions:
        got = await store.get_versioned("alice", sid)
        assert got.version == 1 and [m.text for m in got.state.context] == ["secret"]
        assert (await store.get_versioned("alice", sid, "observations")).version == 1
        with pytest.raises(Fenced):  # alice's fence epoch survived everything bob did
            await store.save_if_version("alice", sid, got.state, 1, fence=Fence(4, "stale"))
    assert sorted((await store.list_session_ids("alice")).session_ids) == sorted(a_sessions)
    assert await _distinct_users(store, store.tables.slots) == {"alice"}
