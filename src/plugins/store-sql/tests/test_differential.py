"""Differential test (G20-style, seeded): two SQL store instances on one database behave
like the kernel's in-memory reference store over random appends, pops, edits, clears,
stale and unconditional saves and deletes, so the per-instance caches never serve a stale
or mixed history."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from hookagent.errors import VersionConflict
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store import UNCONDITIONAL, InMemoryAgentStateStore
from hookagent_store_sql import SQLAgentStateStore
from sqlenv import fresh_store

pytestmark = pytest.mark.anyio

STEPS = {"sqlite": 400, "postgresql": 200, "mariadb": 150}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _view(got) -> tuple:
    if got.state is None:
        return (got.version, None)
    return (got.version, got.state.summary, tuple(m.text for m in got.state.context))


def _mutate(rng: random.Random, states: list, step: int) -> None:
    """Apply one random change identically to every state in ``states``."""
    ctx = states[0].context
    kind = rng.choice(
        ["append"] * 6 + ["pop", "edit", "summary"] + ["clear"] * (rng.random() < 0.2)
    )
    if kind == "append":
        new = [Msg.user(f"m{step}.{i}") for i in range(rng.randint(1, 4))]
        for s in states:
            s.context.extend(new)
    elif kind == "pop" and len(ctx):
        for s in states:
            s.context.pop()
    elif kind == "edit" and len(ctx):
        i, msg = rng.randrange(len(ctx)), Msg.assistant(f"edit{step}")
        for s in states:
            s.context[i] = msg
    elif kind == "clear":
        for s in states:
            s.clear_context()
    else:
        for s in states:
            s.summary = f"sum{step}"


async def _save(store, state, expected):
    try:
        return await store.save_if_version("u", "s", state, expected)
    except VersionConflict:
        return "conflict"


@pytest.mark.parametrize("dialect", list(STEPS))
async def test_sql_instances_match_the_reference_store(dialect: str, tmp_path: Path) -> None:
    rng = random.Random(20261130)
    model = InMemoryAgentStateStore()
    async with fresh_store(dialect, tmp_path) as first:
        second = SQLAgentStateStore(first.engine, table_prefix=first.tables.names.prefix)
        sqls = [first, second]
        held: list = [None, None]  # per client: (model state, sql state, version) or None
        outcomes: Counter[str] = Counter()
        longest = 0
        for step in range(STEPS[dialect]):
            i = rng.randrange(2)
            op = rng.random()
            if op < 0.3 or held[i] is None:
                m, s = await model.get_versioned("u", "s"), await sqls[i].get_versioned("u", "s")
                assert _view(s) == _view(m), step
                longest = max(longest, len(m.state.context) if m.state else 0)
                if m.state is None:
                    held[i] = (AgentState("s", "u"), AgentState("s", "u"), 0)
                else:
                    held[i] = (m.state, s.state, m.version)
            elif op < 0.72:
                _mutate(rng, list(held[i][:2]), step)
            elif op < 0.985:
                mstate, sstate, version = held[i]
                expected = UNCONDITIONAL if rng.random() < 0.1 else version
                got_m = await _save(model, mstate, expected)
                got_s = await _save(sqls[i], sstate, expected)
                assert got_s == got_m, (step, got_s, got_m)
                outcomes["conflict" if got_m == "conflict" else "saved"] += 1
                if got_m != "conflict":
                    held[i] = (mstate, sstate, got_m)
            else:
                key = rng.choice([None, "agent_state"])
                assert await sqls[i].delete("u", "s", key) == await model.delete("u", "s", key)
                held = [None, None]
        for store in sqls:
            assert _view(await store.get_versioned("u", "s")) == _view(
                await model.get_versioned("u", "s")
            )
        await second.aclose()
        # the run really exercised saves, conflicts and histories of some length
        print(dialect, dict(outcomes), longest)
        assert outcomes["saved"] >= 15 and outcomes["conflict"] >= 3 and longest >= 6, (
            outcomes,
            longest,
        )
