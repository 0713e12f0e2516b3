"""Conformance checks of issue 13: slots bound to their state, newer schemas never
overwritten, injective joined ids, the anonymous partition, the empty cursor, edits made
through JSON."""

from __future__ import annotations

import orjson
import pytest

from ..errors import CorruptState, StateSlotMismatch, UnsupportedSchemaVersion
from ..messages import Msg
from ..state import AgentState
from ..store.base import UNCONDITIONAL, AgentStateStore
from .conformance_hooks import StoreHooks
from .pairs import colliding_pairs, colliding_session_keys

LOOK_ALIKES = (" ", "~", "\u200b", "anonymous", "None", "null")
"""User ids a store might confuse with the anonymous partition (``""``)."""


def _texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text for m in state.context]


def _edited_json(state: AgentState, index: int, text: str) -> AgentState:
    """The state through JSON with message ``index``'s text replaced (what an export, an
    edit and an import do)."""
    doc = orjson.loads(state.to_json())
    doc["context"][index]["content"] = [{"type": "text", "text": text}]
    return AgentState.from_json(orjson.dumps(doc))


class SlotConformance(StoreHooks):
    """Mixed into ``StoreConformance``."""

    async def test_a_state_of_another_slot_is_refused(self, store: AgentStateStore) -> None:
        for user, session in (("bob", "s"), ("alice", "t"), ("", "s"), ("alice ", "s")):
            with pytest.raises(StateSlotMismatch):
                await store.save_if_version("alice", "s", AgentState(session, user), 0)
        assert not await store.exists("alice", "s")
        await store.save_if_version("alice", "s", AgentState("s", "alice", "mine"), 0)
        for expected in (1, UNCONDITIONAL):
            with pytest.raises(StateSlotMismatch, match="alice"):
                await store.save_if_version("alice", "s", AgentState("s", "bob", "x"), expected)
        got = await store.get_versioned("alice", "s")
        assert got.version == 1 and got.state is not None and got.state.summary == "mine"
        assert not await store.exists("bob", "s")

    async def test_a_state_planted_under_another_slot_is_corrupt(
        self, store: AgentStateStore
    ) -> None:
        copied = AgentState("x", "mallory", "copied")
        copied.context.append(Msg.user("hi"))
        await self.plant(store, "alice", "s", "agent_state", copied.to_json().encode(), 1)
        with pytest.raises(CorruptState, match="alice"):
            await store.get_versioned("alice", "s")

    async def test_a_newer_schema_is_never_overwritten(self, store: AgentStateStore) -> None:
        doc = orjson.loads(AgentState("s", "u", "from the future").to_json())
        doc["schema_version"] = 99
        await self.plant(store, "u", "s", "agent_state", orjson.dumps(doc), 3)
        with pytest.raises(UnsupportedSchemaVersion):
            await store.get_versioned("u", "s")
        for expected in (3, UNCONDITIONAL):
            with pytest.raises(UnsupportedSchemaVersion, match="'u'"):
                await store.save_if_version("u", "s", AgentState("s", "u", "old"), expected)
        with pytest.raises(UnsupportedSchemaVersion):  # still there, not overwritten
            await store.get_versioned("u", "s")

    async def test_joined_ids_do_not_collide(self, store: AgentStateStore) -> None:
        pairs = colliding_pairs()
        for i, (user, session) in enumerate(pairs):
            state = AgentState(session, user, f"p{i}")
            state.context.append(Msg.user(f"p{i}"))
            await store.save_if_version(user, session, state, 0)
        for i, (user, session) in enumerate(pairs):
            got = await store.get_versioned(user, session)
            assert got.version == 1 and got.state is not None, (user, session)
            assert got.state.summary == f"p{i}", (user, session, got.state.summary)
            assert _texts(got.state) == [f"p{i}"], (user, session)
        for user in {u for u, _ in pairs}:
            listed = sorted((await store.list_session_ids(user, limit=1000)).session_ids)
            assert listed == sorted(s for u, s in pairs if u == user), user
        keyed = colliding_session_keys()
        for i, (session, key) in enumerate(keyed):
            state = AgentState(session, "k", f"k{i}")
            await store.save_if_version("k", session, state, 0, key=key)
        for i, (session, key) in enumerate(keyed):
            got = await store.get_versioned("k", session, key)
            assert got.state is not None and got.state.summary == f"k{i}", (session, key)

    async def test_anonymous_partition_against_look_alikes(self, store: AgentStateStore) -> None:
        await store.save_if_version("", "s", AgentState("s", "", "anon"), 0)
        for user in LOOK_ALIKES:
            assert (await store.get_versioned(user, "s")).version == 0, repr(user)
            assert not await store.exists(user, "s"), repr(user)
            assert (await store.list_session_ids(user)).session_ids == (), repr(user)
            await store.save_if_version(user, "s", AgentState("s", user, f"as {user!r}"), 0)
        for user in LOOK_ALIKES:
            got = await store.get_versioned(user, "s")
            assert got.state is not None and got.state.summary == f"as {user!r}", repr(user)
        got = await store.get_versioned("", "s")
        assert got.version == 1 and got.state is not None and got.state.summary == "anon"
        assert (await store.list_session_ids("")).session_ids == ("s",)
        assert await store.delete("", "s")
        for user in LOOK_ALIKES:
            assert await store.exists(user, "s"), repr(user)

    async def test_the_empty_cursor_is_the_first_page(self, store: AgentStateStore) -> None:
        ids = [f"s{i}" for i in range(5)]
        for sid in ids:
            await store.save_if_version("u", sid, AgentState(sid, "u"), 0)
        first = await store.list_session_ids("u", limit=2)
        assert await store.list_session_ids("u", limit=2, cursor="") == first
        assert len(first.session_ids) == 2 and first.next_cursor
        whole = await store.list_session_ids("u", cursor="")
        assert sorted(whole.session_ids) == ids and whole.next_cursor is None
        assert (await store.list_session_ids("nobody", cursor="")).session_ids == ()

    async def test_an_edit_through_json_is_saved(self, store: AgentStateStore) -> None:
        state = AgentState("s", "u")
        state.context.extend([Msg.user("one"), Msg.assistant("two"), Msg.user("three")])
        await store.save_if_version("u", "s", state, 0)
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        edited = _edited_json(got.state, 1, "TWO")
        assert await store.save_if_version("u", "s", edited, got.version) == 2
        assert _texts((await store.get_versioned("u", "s")).state) == ["one", "TWO", "three"]
        edited.context.append(Msg.user("four"))  # and the next save appends after the edit
        await store.save_if_version("u", "s", edited, 2)
        after = await store.get_versioned("u", "s")
        assert _texts(after.state) == ["one", "TWO", "three", "four"]
