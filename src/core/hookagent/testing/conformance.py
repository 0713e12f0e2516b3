"""The conformance suite every state store subclasses (ours and third parties').

Usage, in a store plugin's tests::

    from hookagent.testing import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        async def store(self):
            store = MyStore(...)      # fresh and empty for each test
            yield store
            await store.aclose()

Set ``supports_fencing = False`` on the subclass if the store does not check ``Fence``.
Define ``open_handle`` (a second handle on the same backend) and ``plant_state`` (raw bytes
behind the store's back) to run the checks that need them; without them those checks are
skipped as "not run: ..." (``pytest -rs`` lists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ..errors import (
    Fenced,
    InvalidIdentifier,
    InvalidState,
    InvalidStoreArgument,
    VersionConflict,
)
from ..messages import (
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..state import AgentState, ToolContext
from ..store.base import UNCONDITIONAL, AgentStateStore, Fence, Versioned
from .conformance_handles import HandleConformance
from .conformance_slots import SlotConformance
from .corpus import HOSTILE_IDS, INVALID_IDS
from .differential import DifferentialConformance, all_sessions


def every_block_message() -> list[Msg]:
    """Messages that together hold every content block type and every optional field."""
    return [
        Msg.system("be brief"),
        Msg.user([TextBlock("hi \u00e9\U0001f600"), ImageBlock("s3://b/cat.png", "image/png")]),
        Msg.assistant(
            [
                ThinkingBlock("let me look"),
                ToolUseBlock("call-1", "lookup", {"key": 1, "nested": {"a": [1, 2.5, None]}}),
            ],
            name="bot",
            metadata={"model": "x", "usage": {"in": 3}},
        ),
        Msg(
            "tool",
            [
                ToolResultBlock(
                    "call-1",
                    "lookup",
                    (TextBlock("found"), DataBlock("file:///r.csv", "text/csv", "r.csv")),
                    "success",
                )
            ],
        ),
        Msg("tool", [ToolResultBlock("call-2", "lookup", (), "denied")]),
        Msg.assistant("done"),
    ]


def full_state(user_id: str, session_id: str) -> AgentState:
    state = AgentState(session_id=session_id, user_id=user_id, summary="so far")
    state.context.extend(every_block_message())
    # the harness plugins' sections, as those plugins write them (plain JSON to a store)
    rule = {"tool_name": "shell", "rule_content": "rm *", "behavior": "ask", "source": "user"}
    state.put_section("permission_context", {"mode": "explore", "ask_rules": {"shell": [rule]}})
    state.put_section("plan_mode_context", {"plan_active": True, "current_plan_file": "PLAN.md"})
    task = {"id": "a" * 32, "subject": "write tests", "state": "in_progress"}
    state.put_section("tasks_context", {"tasks": [task], "revision": 3})
    state.tool_context = ToolContext(["fs", "web"])
    state.extensions["some_plugin"] = {"nested": [1, {"k": "v"}], "flag": True}
    return state


def texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text for m in state.context]


class StoreConformance(DifferentialConformance, SlotConformance, HandleConformance):
    """Inherited tests; a subclass provides a ``store`` fixture yielding a fresh, empty store,
    and optionally ``open_handle`` and ``plant_state`` (``conformance_hooks.StoreHooks``)."""

    pytestmark = pytest.mark.anyio
    supports_fencing = True

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def store(self) -> Any:  # pragma: no cover - subclasses override
        raise NotImplementedError("subclass StoreConformance and define a `store` fixture")

    # ------------------------------------------------------------------ versions and CAS

    async def test_absent_slot_is_version_zero(self, store: AgentStateStore) -> None:
        got = await store.get_versioned("u", "s")
        assert got.state is None and got.version == 0
        assert not await store.exists("u", "s")

    async def test_create_only_if_absent(self, store: AgentStateStore) -> None:
        state = AgentState(session_id="s", user_id="u")
        assert await store.save_if_version("u", "s", state, 0) == 1
        with pytest.raises(VersionConflict) as info:
            await store.save_if_version("u", "s", AgentState(session_id="s", user_id="u"), 0)
        err = info.value
        assert (err.user_id, err.session_id, err.key, err.expected) == ("u", "s", "agent_state", 0)
        assert (await store.get_versioned("u", "s")).version == 1

    async def test_compare_and_set(self, store: AgentStateStore) -> None:
        state = AgentState(session_id="s", user_id="u")
        await store.save_if_version("u", "s", state, 0)
        state.context.append(Msg.user("one"))
        assert await store.save_if_version("u", "s", state, 1) == 2
        stale = AgentState(session_id="s", user_id="u", summary="stale")
        with pytest.raises(VersionConflict):
            await store.save_if_version("u", "s", stale, 1)
        with pytest.raises(VersionConflict):
            await store.save_if_version("u", "s", stale, 5)
        got = await store.get_versioned("u", "s")
        assert got.version == 2 and texts(got.state) == ["one"] and got.state.summary is None  # type: ignore[union-attr]

    async def test_unconditional_bumps_version(self, store: AgentStateStore) -> None:
        assert await store.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL) == 1
        assert await store.save_if_version("u", "s", AgentState("s", "u", "x"), UNCONDITIONAL) == 2
        got = await store.get_versioned("u", "s")
        assert got.version == 2 and got.state is not None and got.state.summary == "x"

    async def test_concurrent_writers_exactly_one_wins(self, store: AgentStateStore) -> None:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        outcomes: list[str] = []

        async def writer(i: int) -> None:
            state = AgentState("s", "u", summary=f"w{i}")
            try:
                await store.save_if_version("u", "s", state, 1)
                outcomes.append(f"w{i}")
            except VersionConflict:
                outcomes.append("conflict")

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(writer, i)
        winners = [o for o in outcomes if o != "conflict"]
        assert len(winners) == 1, outcomes
        got = await store.get_versioned("u", "s")
        assert got.version == 2 and got.state is not None and got.state.summary == winners[0]

    async def test_fencing(self, store: AgentStateStore) -> None:
        if not self.supports_fencing:
            pytest.skip("this store documents that it does not check fences")
        await store.save_if_version("u", "s", AgentState("s", "u"), 0, fence=Fence(2, "new"))
        with pytest.raises(Fenced):
            await store.save_if_version(
                "u", "s", AgentState("s", "u", "old"), 1, fence=Fence(1, "old")
            )
        assert (await store.get_versioned("u", "s")).version == 1

    # ------------------------------------------------------------------ round trips

    async def test_round_trip_every_block_and_section(self, store: AgentStateStore) -> None:
        state = full_state("u", "s")
        await store.save_if_version("u", "s", state, 0)
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        assert list(got.state.context) == list(full_state_messages(state))
        assert got.state.summary == "so far"
        assert got.state.tool_context == state.tool_context
        assert got.state.extensions == state.extensions
        assert got.state.to_json() == state.to_json()

    async def test_loaded_state_is_detached(self, store: AgentStateStore) -> None:
        await store.save_if_version("u", "s", full_state("u", "s"), 0)
        first = await store.get_versioned("u", "s")
        assert first.state is not None
        first.state.context.clear()
        first.state.summary = "changed"
        second = await store.get_versioned("u", "s")
        assert second.state is not None and len(second.state.context) == 6
        assert second.state.summary == "so far"

    async def test_appends_then_rewrites(self, store: AgentStateStore) -> None:
        state = AgentState("s", "u")
        version = await store.save_if_version("u", "s", state, 0)
        expected: list[str] = []
        for turn in range(3):
            got = await store.get_versioned("u", "s")
            assert got.state is not None and texts(got.state) == expected
            loaded = got.state
            assert loaded.context.unchanged_prefix == len(expected)
            new = [f"u{turn}", f"a{turn}"]
            loaded.context.extend(Msg.user(t) for t in new)
            version = await store.save_if_version("u", "s", loaded, got.version)
            assert loaded.context.unchanged_prefix == len(loaded.context)
            expected += new
        got = await store.get_versioned("u", "s")
        assert texts(got.state) == expected and got.version == version
        # shrink then grow: the prefix changed, the store must not keep the dropped tail
        assert got.state is not None
        loaded = got.state
        loaded.context.pop()
        loaded.context.append(Msg.user("replaced"))
        version = await store.save_if_version("u", "s", loaded, version)
        assert texts((await store.get_versioned("u", "s")).state) == [*expected[:-1], "replaced"]
        # clear (compaction-like) then append
        loaded.clear_context()
        loaded.context.append(Msg.user("fresh"))
        version = await store.save_if_version("u", "s", loaded, version)
        got = await store.get_versioned("u", "s")
        assert texts(got.state) == ["fresh"] and got.version == version

    async def test_unencodable_state_writes_nothing(self, store: AgentStateStore) -> None:
        await store.save_if_version("u", "s", AgentState("s", "u", "kept"), 0)
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        got.state.context.append(Msg.user("x", metadata={"bad": object()}))
        with pytest.raises(InvalidState):
            await store.save_if_version("u", "s", got.state, 1)
        after = await store.get_versioned("u", "s")
        assert after.version == 1 and texts(after.state) == []

    # ------------------------------------------------------------------ keys, delete, list

    async def test_other_keys_and_delete(self, store: AgentStateStore) -> None:
        await store.save_if_version("u", "s", AgentState("s", "u", "main"), 0)
        await store.save_if_version("u", "s", AgentState("s", "u", "obs"), 0, key="observations")
        assert await store.exists("u", "s", key="observations")
        assert (await store.get_versioned("u", "s", key="observations")).state.summary == "obs"  # type: ignore[union-attr]
        assert await store.delete("u", "s", key="observations")
        assert not await store.exists("u", "s", key="observations")
        assert await store.exists("u", "s")
        assert not await store.delete("u", "s", key="observations")
        await store.save_if_version("u", "s", AgentState("s", "u"), 0, key="observations")
        assert await store.delete("u", "s")
        assert not await store.exists("u", "s") and not await store.exists("u", "s", "observations")
        assert not await store.delete("u", "s")
        assert (await store.get_versioned("u", "s")).version == 0
        assert await store.save_if_version("u", "s", AgentState("s", "u"), 0) == 1

    async def test_list_sessions_paginated(self, store: AgentStateStore) -> None:
        ids = [f"s{i:02d}" for i in range(7)]
        for sid in ids:
            await store.save_if_version("u", sid, AgentState(sid, "u"), 0)
        await store.save_if_version("other", "zz", AgentState("zz", "other"), 0)
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await store.list_session_ids("u", limit=3, cursor=cursor)
            assert len(page.session_ids) <= 3
            seen += page.session_ids
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
            assert pages < 10
        assert sorted(seen) == ids and len(seen) == len(set(seen))
        assert (await store.list_session_ids("nobody")).session_ids == ()

    async def test_anonymous_partition(self, store: AgentStateStore) -> None:
        await store.save_if_version("", "s", AgentState("s", "", "anon"), 0)
        await store.save_if_version("x", "s", AgentState("s", "x", "named"), 0)
        assert (await store.get_versioned("", "s")).state.summary == "anon"  # type: ignore[union-attr]
        assert (await store.get_versioned("x", "s")).state.summary == "named"  # type: ignore[union-attr]
        assert (await store.list_session_ids("")).session_ids == ("s",)

    # ------------------------------------------------------------------ tenants and ids

    async def test_tenant_isolation(self, store: AgentStateStore) -> None:
        for sid in ("s1", "s2"):
            await store.save_if_version("alice", sid, full_state("alice", sid), 0)
        for bob in ("bob", "alice ", "Alice", "alic", "alice*", "*", ""):
            assert (await store.get_versioned(bob, "s1")).version == 0, bob
            assert not await store.exists(bob, "s1"), bob
            assert not await store.delete(bob, "s1"), bob
            assert (await store.list_session_ids(bob)).session_ids == (), bob
            with pytest.raises(VersionConflict):
                await store.save_if_version(bob, "s1", AgentState("s1", bob), 1)
        await store.save_if_version("bob", "s1", AgentState("s1", "bob", "bob's"), 0)
        for sid in ("s1", "s2"):
            got = await store.get_versioned("alice", sid)
            assert got.version == 1 and got.state is not None and got.state.summary == "so far"
        assert sorted((await store.list_session_ids("alice")).session_ids) == ["s1", "s2"]

    async def test_hostile_ids_round_trip_without_collision(self, store: AgentStateStore) -> None:
        for i, hid in enumerate(HOSTILE_IDS):
            await store.save_if_version(hid, hid, AgentState(hid, hid, summary=f"as-user-{i}"), 0)
            await store.save_if_version(
                "u", hid, AgentState(hid, "u", summary=f"as-session-{i}"), 0
            )
        for i, hid in enumerate(HOSTILE_IDS):
            got = await store.get_versioned(hid, hid)
            assert got.state is not None and got.state.summary == f"as-user-{i}", hid
            assert got.state.user_id == hid and got.state.session_id == hid
            got = await store.get_versioned("u", hid)
            assert got.state is not None and got.state.summary == f"as-session-{i}", hid
            assert (await store.list_session_ids(hid)).session_ids == (hid,)
        listed = await all_sessions(store, "u")
        assert sorted(listed) == sorted(HOSTILE_IDS)

    async def test_invalid_ids_are_refused(self, store: AgentStateStore) -> None:
        for bad in INVALID_IDS:
            with pytest.raises(InvalidIdentifier):
                await store.save_if_version("u", bad, AgentState("x", "u"), 0)  # type: ignore[arg-type]
            with pytest.raises(InvalidIdentifier):
                await store.get_versioned("u", bad)  # type: ignore[arg-type]
            with pytest.raises(InvalidIdentifier):
                await store.exists("u", bad)  # type: ignore[arg-type]
            with pytest.raises(InvalidIdentifier):
                await store.delete("u", bad)  # type: ignore[arg-type]
            if bad != "":
                with pytest.raises(InvalidIdentifier):
                    await store.get_versioned(bad, "s")  # type: ignore[arg-type]
                with pytest.raises(InvalidIdentifier):
                    await store.list_session_ids(bad)  # type: ignore[arg-type]
        assert (await store.list_session_ids("u")).session_ids == ()

    async def test_bad_arguments_are_refused_with_a_typed_error(
        self, store: AgentStateStore
    ) -> None:
        """Wrong types or ranges give ``InvalidStoreArgument`` before anything is written."""
        state = AgentState("s", "u", summary="never stored")
        for expected in ("1", True, -1, 1.0, None):
            with pytest.raises(InvalidStoreArgument):
                await store.save_if_version("u", "s", state, expected)  # type: ignore[arg-type]
        bad_fences: list[Any] = ["lease", Fence(-1, "o"), Fence(2**53, "o"), Fence(1, "a\x00")]
        bad_fences += [Fence(1, "\ud800"), Fence(1, "o" * 257)]
        bad_fences += [Fence("1", "o"), Fence(1, 5)]  # type: ignore[arg-type]
        for fence in bad_fences if self.supports_fencing else []:
            with pytest.raises(InvalidStoreArgument):
                await store.save_if_version("u", "s", state, 0, fence=fence)
        for limit in (0, -1, "5", True, 2.0, 10_001, 2**63):
            with pytest.raises(InvalidStoreArgument):
                await store.list_session_ids("u", limit=limit)  # type: ignore[arg-type]
        for cursor in (5, b"s", ["s"]):
            with pytest.raises(InvalidStoreArgument):
                await store.list_session_ids("u", cursor=cursor)  # type: ignore[arg-type]
        assert await store.get_versioned("u", "s") == Versioned(None, 0)
        assert (await store.list_session_ids("u")).session_ids == ()


def full_state_messages(state: AgentState) -> Sequence[Msg]:
    return list(state.context)
