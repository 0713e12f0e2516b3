"""A check a log backend's tests run: a session with history segments loads cold as it was.

``check_segmented_cold_load(log)`` records calls with tools on ``log`` with small segments
(K=4), then loads the session in a fresh store (a cold load: the newest checkpoint, the
segments it names, the commits after them) and compares it with the live state and with
a load that ignores segments (every commit from the base, what an older reader does). A
backend with ``read_rows_after`` or ``read_commits_after`` must have had its cold load read
through them.
"""

from __future__ import annotations

from typing import Any

from hookagent import AgentConfig, Msg, RuntimeContext
from hookagent.codec import encode_state
from hookagent.sessionlog import SessionLog
from hookagent.testing import ScriptedModel, tool_call

from . import catalogue as c
from .admin import SessionLogAdmin
from .plugin import PLUGIN
from .store import LogBackedStore


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"value {key}"


def _config(log: SessionLog, k: int) -> AgentConfig:
    from . import plugin

    replies: list[Any] = []
    for i in range(40):
        replies += [tool_call("lookup", key=i), Msg.assistant(f"answer {i}")]
    return AgentConfig(
        model=ScriptedModel(replies),
        session_log=log,
        plugins=[plugin],
        tools=[lookup],
        autoload_plugins=False,
        plugin_options={PLUGIN: {"segment_messages": k}},
    )


async def check_segmented_cold_load(
    log: SessionLog, user_id: str = "seg-user", session_id: str = "seg-session", calls: int = 9
) -> dict[str, Any]:
    """Record ``calls`` calls (4 messages each, K=4), load cold, compare; what it saw."""
    agent = _config(log, 4).build()
    for i in range(calls):
        await agent.call(f"question {i}", RuntimeContext(user_id=user_id, session_id=session_id))
    live = encode_state(await agent.get_agent_state(user_id, session_id))
    head = await log.head(user_id, session_id)
    cp = (await log.read_after(user_id, session_id, head.checkpoint_seq - 1, 1))[0]
    chain = cp.payload.get("segments") or []
    assert chain, "no segment was cut"
    reads: list[Any] = []
    points: list[Any] = []

    class Counting:
        """The log, with the seqs its cold reads (the fast paths it has) start after."""

        locality = log.locality

        def __getattr__(self, name: str) -> Any:
            got = getattr(log, name)
            seen = {"read_rows_after": reads, "read_commits_after": points}.get(name)
            if seen is None:
                return got

            async def counted(u: str, s: str, seq: Any) -> Any:
                seen.append(seq)
                return await got(u, s, seq)

            return counted

    fresh = LogBackedStore(Counting())
    state = (await fresh.get_versioned(user_id, session_id)).state
    assert state is not None
    cold = encode_state(state)
    assert cold == live
    if hasattr(log, "read_rows_after"):
        assert reads == [chain[-1][1]], (reads, chain)  # only the commits past the segments
    if hasattr(log, "read_commits_after"):  # every segment in one read, undecoded
        assert points == [[link[0] - 1 for link in chain]], (points, chain)
    every = (await SessionLogAdmin(log).project(user_id, session_id)).state()  # no segments
    assert encode_state(every) == live
    kinds = [e.type for e in await log.read_after(user_id, session_id, 0)]
    return {"segments": len(chain), "segment_events": kinds.count(c.SEGMENT), "head": head.seq}
