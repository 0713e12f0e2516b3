"""The one persist sequence, for runs and admin operations alike.

``before_persist`` hook, compare-and-set save (with the configuration's conflict policy),
``after_persist`` hook. A run also records the saved state in its agent's slot cache and
emits ``state_persisted``; the caller does that with the version returned here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import VersionConflict
from .state import AgentState
from .store.base import UNCONDITIONAL, AgentStateStore, ConflictPolicy, Fence

if TYPE_CHECKING:
    from .context import RuntimeContext
    from .kernel import Kernel


async def persist(
    kernel: Kernel,
    state: AgentState,
    ctx: RuntimeContext,
    slot: tuple[str, str],
    *,
    outcome: str,
    version: int,
    fence: Fence | None,
    loaded_len: int,
    policy: ConflictPolicy | None = None,
) -> int:
    """Run the persist hooks around a save at ``version``; return the new version."""
    await kernel.relay.before_persist(state, ctx, outcome)
    store = kernel._store
    if store is None:  # not bound yet: save() awaits the opening
        new = await save(
            kernel, state, slot, version=version, fence=fence, loaded_len=loaded_len, policy=policy
        )
    else:  # save(), its first attempt inline: one coroutine less per call
        try:
            new = await store.save_if_version(slot[0], slot[1], state, version, fence=fence)
        except VersionConflict as conflict:
            new = await _after_conflict(
                kernel, store, conflict, state, slot, fence, loaded_len, policy
            )
    await kernel.relay.after_persist(state, ctx, new)
    return new


async def save(
    kernel: Kernel,
    state: AgentState,
    slot: tuple[str, str],
    *,
    version: int,
    fence: Fence | None,
    loaded_len: int,
    policy: ConflictPolicy | None = None,
) -> int:
    """Compare-and-set at ``version``; on a conflict, what the policy says.

    ``APPEND_MERGE`` reloads, appends the messages added since ``loaded_len`` after what is
    stored, and retries once at the fresh version (a second conflict raises). A history
    rewritten since it was loaded (compaction, a cleared context) has no such suffix: its
    conflict is raised, never merged.
    """
    store = await kernel.store()
    try:
        return await store.save_if_version(slot[0], slot[1], state, version, fence=fence)
    except VersionConflict as conflict:
        return await _after_conflict(
            kernel, store, conflict, state, slot, fence, loaded_len, policy
        )


async def _after_conflict(
    kernel: Kernel,
    store: AgentStateStore,
    conflict: VersionConflict,
    state: AgentState,
    slot: tuple[str, str],
    fence: Fence | None,
    loaded_len: int,
    policy: ConflictPolicy | None,
) -> int:
    """What the conflict policy says after a lost compare-and-set (``conflict``)."""
    policy = policy or kernel.config.conflict_policy
    u, s = slot
    if policy is ConflictPolicy.FAIL:
        raise conflict
    if policy is ConflictPolicy.APPEND_MERGE and state.context.unchanged_prefix < loaded_len:
        conflict.add_note(
            "hookagent: the history was rewritten since it was loaded (compaction, a "
            "cleared context), so APPEND_MERGE cannot append it to the stored one"
        )
        raise conflict
    if policy is ConflictPolicy.OVERWRITE:
        return await store.save_if_version(u, s, state, UNCONDITIONAL, fence=fence)
    fresh = await store.get_versioned(u, s)
    merged = fresh.state or AgentState(session_id=s, user_id=u)
    merged.context.extend(state.context[loaded_len:])
    new = await store.save_if_version(u, s, merged, fresh.version, fence=fence)
    state.context.replace(merged.context)
    state.context.mark_committed()
    return new
