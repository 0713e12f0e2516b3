"""A warm load and a save cost what the call added: the loaded histories share the instance's
append-only message list per slot (``History.shared``), and a rewrite starts a new list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hookagent.errors import VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore
from sqlenv import DIALECTS, fresh_store

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=DIALECTS)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SQLAgentStateStore]:
    async with fresh_store(request.param, tmp_path) as s:
        yield s


def turn(state: AgentState, i: int) -> None:
    state.context.extend([Msg.user(f"q{i}"), Msg.assistant(f"a{i}")])


def texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text for m in state.context]


async def test_warm_calls_share_one_message_list_and_a_rewrite_leaves_old_loads_alone(
    store: SQLAgentStateStore,
) -> None:
    state = AgentState("s", "u")
    turn(state, 0)
    await store.save_if_version("u", "s", state, 0)
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    shared = got.state.context._base
    assert type(shared) is list
    for i in range(1, 4):
        turn(got.state, i)
        await store.save_if_version("u", "s", got.state, got.version)
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        assert got.state.context._base is shared  # the save extended it, the load reused it
        assert len(got.state.context) == 2 * (i + 1)
    assert got.state is not None
    before = got.state.context
    kept = [m.text for m in before]
    rewritten = await store.get_versioned("u", "s")
    assert rewritten.state is not None
    rewritten.state.context[0] = Msg.user("changed")
    await store.save_if_version("u", "s", rewritten.state, rewritten.version)
    assert [m.text for m in before] == kept  # the old load still reads what it loaded
    after = await store.get_versioned("u", "s")
    assert texts(after.state)[0] == "changed"
    assert texts(after.state)[1:] == kept[1:]
    assert after.state is not None and after.state.context._base is not shared


async def test_a_tail_another_instance_wrote_extends_the_shared_list(
    store: SQLAgentStateStore,
) -> None:
    """A warm load that reads rows another instance appended extends the same list; a
    history loaded before reads only its own length of it."""
    other = SQLAgentStateStore(store.engine, table_prefix=store.tables.names.prefix)
    try:
        state = AgentState("s", "u")
        turn(state, 0)
        await store.save_if_version("u", "s", state, 0)
        first = await store.get_versioned("u", "s")
        assert first.state is not None
        theirs = await other.get_versioned("u", "s")
        assert theirs.state is not None
        turn(theirs.state, 1)
        await other.save_if_version("u", "s", theirs.state, theirs.version)
        second = await store.get_versioned("u", "s")
        assert second.state is not None
        assert second.state.context._base is first.state.context._base
        assert texts(second.state) == ["q0", "a0", "q1", "a1"]
        assert texts(first.state) == ["q0", "a0"]  # unchanged by the extension
        # the earlier history appends into its own tail, not into the shared list
        first.state.context.append(Msg.user("mine"))
        assert texts(second.state) == ["q0", "a0", "q1", "a1"]
        # a save from the stale history conflicts and leaves the shared list alone
        with pytest.raises(VersionConflict):
            await store.save_if_version("u", "s", first.state, first.version)
        third = await store.get_versioned("u", "s")
        assert texts(third.state) == ["q0", "a0", "q1", "a1"]
    finally:
        await other.aclose()
