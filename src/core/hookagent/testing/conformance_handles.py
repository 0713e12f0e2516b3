"""Conformance checks of issue 13: the one fence rule on every save form, and what two
handles on one backend must agree on (stale caches, compare-and-set, edits, races)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ..errors import Fenced, VersionConflict
from ..messages import Msg
from ..state import AgentState
from ..store.base import UNCONDITIONAL, AgentStateStore, ExpectedVersion, Fence
from .conformance_hooks import StoreHooks
from .conformance_slots import _edited_json, _texts


class HandleConformance(StoreHooks):
    """Mixed into ``StoreConformance``."""

    supports_fencing = True
    fences_per_key = False
    """True if the store records fences per (user, session, key), not per session: the
    check of a fenced *create* is then not run (a fresh key has no recorded epoch)."""

    # ------------------------------------------------------------------ the one fence rule

    async def test_the_fence_rule_on_every_save_form(self, store: AgentStateStore) -> None:
        if not self.supports_fencing:
            pytest.skip("not run: this store documents that it does not check fences")
        s = AgentState("s", "u", "kept")
        assert await store.save_if_version("u", "s", s, 0, fence=Fence(5, "a")) == 1
        forms: list[ExpectedVersion] = [1, UNCONDITIONAL]
        for expected in forms:
            for stale in (Fence(4, "a"), Fence(5, "b"), Fence(0, "")):
                with pytest.raises(Fenced):
                    await store.save_if_version(
                        "u", "s", AgentState("s", "u"), expected, fence=stale
                    )
        got = await store.get_versioned("u", "s")
        assert got.version == 1 and got.state is not None and got.state.summary == "kept"
        # same epoch same owner passes; a newer epoch passes and is recorded
        assert await store.save_if_version("u", "s", s, 1, fence=Fence(5, "a")) == 2
        assert await store.save_if_version("u", "s", s, UNCONDITIONAL, fence=Fence(5, "a")) == 3
        assert await store.save_if_version("u", "s", s, UNCONDITIONAL, fence=Fence(6, "b")) == 4
        for expected in (4, UNCONDITIONAL):
            with pytest.raises(Fenced):
                await store.save_if_version("u", "s", s, expected, fence=Fence(5, "a"))
            with pytest.raises(Fenced):
                await store.save_if_version("u", "s", s, expected, fence=Fence(6, "a"))
        # a save without a fence is not fence-checked
        assert await store.save_if_version("u", "s", s, 4) == 5
        assert await store.save_if_version("u", "s", s, UNCONDITIONAL) == 6
        if not self.fences_per_key:  # the create form: a new key of a fenced session
            for stale in (Fence(5, "b"), Fence(6, "a")):
                with pytest.raises(Fenced):
                    await store.save_if_version("u", "s", s, 0, key="other", fence=stale)
            assert not await store.exists("u", "s", key="other")
        assert (await store.get_versioned("u", "s")).version == 6

    # ------------------------------------------------------------------ two handles

    async def test_a_second_handle_never_reads_a_stale_cache(self, store: AgentStateStore) -> None:
        async with self.handles(store, 1) as (other,):

            async def both(expected: list[str], version: int) -> None:
                for handle in (store, other):
                    got = await handle.get_versioned("u", "s")
                    assert got.version == version and _texts(got.state) == expected

            state = AgentState("s", "u")
            state.context.extend(Msg.user(t) for t in ("a", "b", "c"))
            await store.save_if_version("u", "s", state, 0)
            await both(["a", "b", "c"], 1)
            state.context.append(Msg.user("d"))  # an append
            await store.save_if_version("u", "s", state, 1)
            await both(["a", "b", "c", "d"], 2)
            state.context.pop()  # same count, new content
            state.context.append(Msg.user("D"))
            await store.save_if_version("u", "s", state, 2)
            await both(["a", "b", "c", "D"], 3)
            fresh = AgentState("s", "u")  # re-created with as many messages
            fresh.context.extend(Msg.user(t) for t in ("w", "x", "y", "z"))
            assert await store.delete("u", "s")
            await store.save_if_version("u", "s", fresh, 0)
            await both(["w", "x", "y", "z"], 1)
            fresh.context.replace([Msg.user(t) for t in ("1", "2", "3", "4")])
            await other.save_if_version("u", "s", fresh, UNCONDITIONAL)  # the other writes
            await both(["1", "2", "3", "4"], 2)
            assert await other.delete("u", "s")
            assert (await store.get_versioned("u", "s")).version == 0
            assert not await store.exists("u", "s")

    async def test_compare_and_set_across_handles(self, store: AgentStateStore) -> None:
        async with self.handles(store, 1) as (other,):
            await store.save_if_version("u", "s", AgentState("s", "u", "v1"), 0)
            mine = await store.get_versioned("u", "s")
            theirs = await other.get_versioned("u", "s")
            assert theirs.version == 1 and theirs.state is not None
            theirs.state.summary = "theirs"
            await other.save_if_version("u", "s", theirs.state, 1)
            assert mine.state is not None
            with pytest.raises(VersionConflict):
                await store.save_if_version("u", "s", mine.state, 1)
            with pytest.raises(VersionConflict):
                await other.save_if_version("u", "s", AgentState("s", "u"), 0)
            got = await store.get_versioned("u", "s")
            assert got.version == 2 and got.state is not None and got.state.summary == "theirs"
            assert (await other.list_session_ids("u")).session_ids == ("s",)

    async def test_an_edit_through_json_is_seen_by_a_second_handle(
        self, store: AgentStateStore
    ) -> None:
        async with self.handles(store, 1) as (other,):
            for writer in (store, other):  # the edit made through either handle
                state = AgentState("s", "u")
                state.context.extend([Msg.user("one"), Msg.assistant("two")])
                await writer.save_if_version("u", "s", state, UNCONDITIONAL)
                for handle in (store, other):  # both caches warm
                    assert _texts((await handle.get_versioned("u", "s")).state) == ["one", "two"]
                got = await writer.get_versioned("u", "s")
                assert got.state is not None
                edited = _edited_json(got.state, 0, "ONE")
                version = await writer.save_if_version("u", "s", edited, got.version)
                for handle in (store, other):
                    seen = await handle.get_versioned("u", "s")
                    assert seen.version == version and _texts(seen.state) == ["ONE", "two"]

    async def test_a_race_through_separate_handles_has_one_winner(
        self, store: AgentStateStore
    ) -> None:
        async with self.handles(store, 3) as others:
            handles = [store, *others]
            for round_ in range(4):
                session = f"race{round_}"
                for expected in (0, 1):
                    winners: list[str] = []

                    async def writer(
                        i: int, handle: Any, expected: int, session: str, winners: list[str]
                    ) -> None:
                        state = AgentState(session, "u", summary=f"w{i}")
                        try:
                            await handle.save_if_version("u", session, state, expected)
                            winners.append(f"w{i}")
                        except VersionConflict:
                            pass

                    async with anyio.create_task_group() as tg:
                        for i in range(8):
                            tg.start_soon(
                                writer, i, handles[i % len(handles)], expected, session, winners
                            )
                    assert len(winners) == 1, (session, expected, winners)
                    for handle in handles:
                        got = await handle.get_versioned("u", session)
                        assert got.version == expected + 1, (session, expected)
                        assert got.state is not None and got.state.summary == winners[0]
