"""APPEND_MERGE appends the run's new messages to what another writer stored; a history that
was rewritten during the run (compaction, a cleared context) has no such suffix, so the
conflict is raised instead of merging a wrong slice."""

from __future__ import annotations

import pytest
from hookagent import (
    AgentConfig,
    AgentState,
    ConflictPolicy,
    InMemoryAgentStateStore,
    Msg,
    RuntimeContext,
    VersionConflict,
    hookimpl,
)
from hookagent.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Rewrites:
    """Before the save: replace the history by its last two messages (as compaction does),
    and let another writer save the slot meanwhile."""

    def __init__(self, store: InMemoryAgentStateStore, rewrite: bool) -> None:
        self.store, self.rewrite = store, rewrite

    @hookimpl
    async def hookagent_before_persist(self, state: AgentState, ctx: RuntimeContext) -> None:
        if self.rewrite:
            state.context.replace(state.context[-2:])
        got = await self.store.get_versioned(state.user_id, state.session_id)
        other = got.state or AgentState(state.session_id, state.user_id)
        other.context.append(Msg.user("from elsewhere"))
        await self.store.save_if_version(state.user_id, state.session_id, other, got.version)


async def seeded(store: InMemoryAgentStateStore) -> None:
    state = AgentState("s", "u")
    state.context.extend(Msg.user(f"old {i}") for i in range(6))
    await store.save_if_version("u", "s", state, 0)


@pytest.mark.parametrize("rewrite", [False, True])
async def test_append_merge_refuses_a_rewritten_history(rewrite: bool) -> None:
    store = InMemoryAgentStateStore()
    await seeded(store)
    config = AgentConfig(
        model=ScriptedModel(default="reply"),
        plugins=[Rewrites(store, rewrite)],
        state_store=store,
        conflict_policy=ConflictPolicy.APPEND_MERGE,
        autoload_plugins=False,
    )
    agent = config.build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    if not rewrite:  # the run only appended: its two messages go after the other writer's
        await agent.call("mine", ctx)
        texts = [m.text for m in (await store.get_versioned("u", "s")).state.context]
        assert texts == [*(f"old {i}" for i in range(6)), "from elsewhere", "mine", "reply"]
        return
    with pytest.raises(VersionConflict) as info:
        await agent.call("mine", ctx)
    assert "rewritten" in "".join(getattr(info.value, "__notes__", []))
    texts = [m.text for m in (await store.get_versioned("u", "s")).state.context]
    assert texts == [*(f"old {i}" for i in range(6)), "from elsewhere"]  # nothing merged wrong
