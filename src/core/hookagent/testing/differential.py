"""G20 of the conformance suite: seeded random operations on a store and on the in-memory
reference store must give the same results and the same states, step by step."""

from __future__ import annotations

import random
from typing import Any

from ..messages import Msg
from ..state import AgentState
from ..store.base import AgentStateStore


class DifferentialConformance:
    """Base of ``StoreConformance``: the differential test (``differential_steps`` steps)."""

    differential_steps = 250

    async def test_random_operations_match_the_reference_model(
        self, store: AgentStateStore
    ) -> None:
        """Seeded random operations on the store and on the in-memory reference give the
        same results and the same states, step by step."""
        from ..store.memory import InMemoryAgentStateStore

        reference = InMemoryAgentStateStore()
        rng = random.Random(20261130)
        users, sessions, keys = ["", "u", "U"], ["s", "t", "a/b"], ["agent_state", "obs"]
        loaded: dict[tuple[str, str, str], tuple[AgentState, AgentState, int]] = {}

        async def both(op: str, *args: Any, **kw: Any) -> Any:
            outcomes = []
            for target in (store, reference):
                try:
                    outcomes.append(("ok", await getattr(target, op)(*args, **kw)))
                except Exception as exc:
                    outcomes.append(("error", type(exc).__name__))
            return outcomes

        for step in range(self.differential_steps):
            u, s, k = rng.choice(users), rng.choice(sessions), rng.choice(keys)
            action = rng.random()
            if action < 0.35:  # load both, then maybe modify and save at the loaded version
                got, ref = (
                    await store.get_versioned(u, s, k),
                    await reference.get_versioned(u, s, k),
                )
                assert got.version == ref.version, (step, u, s, k)
                assert (got.state is None) == (ref.state is None), (step, u, s, k)
                if got.state is not None:
                    assert got.state.to_json() == ref.state.to_json(), (step, u, s, k)  # type: ignore[union-attr]
                mine = got.state or AgentState(s, u)
                theirs = ref.state or AgentState(s, u)
                loaded[(u, s, k)] = (mine, theirs, got.version)
            elif action < 0.75 and (u, s, k) in loaded:  # mutate a loaded copy and save it
                mine, theirs, version = loaded[(u, s, k)]
                change = rng.choice(["append", "append", "pop", "clear", "summary"])
                for st in (mine, theirs):
                    if change == "append":
                        st.context.append(
                            Msg.user(f"m{step}", id=f"id{step}", timestamp=float(step))
                        )
                    elif change == "pop" and st.context:
                        st.context.pop()
                    elif change == "clear":
                        st.clear_context()
                    elif change == "summary":
                        st.summary = f"summary {step}"
                expected = version if rng.random() < 0.8 else version + rng.choice([-1, 1, 2])
                if expected < 0:
                    expected = 0
                a, b = await both("save_if_version", u, s, mine, expected, key=k)
                if a[0] == "ok" and b[0] == "ok":
                    loaded[(u, s, k)] = (mine, theirs, a[1])
                else:
                    loaded.pop((u, s, k), None)
                assert a == b, (step, change, u, s, k, a, b)
            elif action < 0.85:
                a, b = await both("delete", u, s, None if rng.random() < 0.5 else k)
                assert a == b, (step, "delete", a, b)
            elif action < 0.93:
                a, b = await both("exists", u, s, k)
                assert a == b, (step, "exists", a, b)
            else:
                mine_ids = sorted(await all_sessions(store, u))
                ref_ids = sorted(await all_sessions(reference, u))
                assert mine_ids == ref_ids, (step, "list", u, mine_ids, ref_ids)


async def all_sessions(store: AgentStateStore, user_id: str) -> list[str]:
    """Every session id of a user, walking the pages (17 at a time, to cross page ends)."""
    out: list[str] = []
    cursor = None
    while True:
        page = await store.list_session_ids(user_id, limit=17, cursor=cursor)
        out += page.session_ids
        cursor = page.next_cursor
        if cursor is None:
            return out
