"""RuntimeContext: never-null run_id, attributes, derivation, resolve_agent_state."""

from __future__ import annotations

import re

import pytest
from hookagent import (
    AgentConfig,
    AgentState,
    InMemoryAgentStateStore,
    RuntimeContext,
    resolve_agent_state,
)


class Base:
    pass


class Mid(Base):
    pass


class Leaf(Mid):
    pass


def test_run_id_is_never_none() -> None:
    for given in (None, "", "   "):
        ctx = RuntimeContext(user_id="u", session_id="s", run_id=given)
        assert re.fullmatch(r"[0-9a-f]{32}", ctx.run_id)
    assert RuntimeContext(run_id="trace-1").run_id == "trace-1"
    assert RuntimeContext().run_id != RuntimeContext().run_id
    empty = RuntimeContext.empty()
    assert empty.user_id == "" and empty.session_id is None and empty.agent_state is None
    assert re.fullmatch(r"[0-9a-f]{32}", empty.run_id)


def test_string_attributes() -> None:
    ctx = RuntimeContext().put("request_id", "req-1")
    assert ctx.get("request_id") == "req-1" and ctx.extra == {"request_id": "req-1"}
    ctx.extra["direct"] = 1
    assert ctx.get("direct") == 1 and ctx.get("missing", "d") == "d"


def test_typed_attributes_exact_then_most_specific_supertype() -> None:
    ctx = RuntimeContext()
    base, mid = Base(), Mid()
    ctx.put(Base, base)
    assert ctx.get(Leaf) is base
    ctx.put(Mid, mid)
    assert ctx.get(Leaf) is mid and ctx.get(Mid) is mid and ctx.get(Base) is base
    leaf = Leaf()
    ctx.put(Leaf, leaf)
    assert ctx.get(Leaf) is leaf
    assert ctx.get(int) is None
    with pytest.raises(TypeError):
        ctx.put(Leaf, Base())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ctx.put(3, "x")  # type: ignore[call-overload]


def test_derive_copies_identity_and_attributes_and_keeps_run_id() -> None:
    parent = (
        RuntimeContext(user_id="alice", session_id="s1", run_id="chain-1")
        .put("k", "v")
        .put(Base, Base())
    )
    parent.agent_state = AgentState("s1", "alice")
    child = parent.derive(session_id="sub-1")
    assert (child.user_id, child.session_id, child.run_id) == ("alice", "sub-1", "chain-1")
    assert child.parent_run_id == "chain-1"
    assert child.get("k") == "v" and child.get(Base) is parent.get(Base)
    assert child.agent_state is None
    child.put("k", "changed")
    assert parent.get("k") == "v"
    fresh = parent.derive(run_id=None)
    assert fresh.run_id != "chain-1" and fresh.parent_run_id is None and fresh.session_id == "s1"
    explicit = parent.derive(run_id="other")
    assert explicit.run_id == "other"


@pytest.mark.anyio
async def test_resolve_agent_state() -> None:
    store = InMemoryAgentStateStore()
    await store.save_if_version("", "default", AgentState("default", "", summary="anon"), 0)
    agent = AgentConfig(state_store=store, autoload_plugins=False).build()
    ctx = RuntimeContext(user_id="alice", session_id="s")
    assert (await resolve_agent_state(ctx, agent)).summary == "anon"
    assert (await resolve_agent_state(None, agent)).summary == "anon"
    ctx.agent_state = AgentState("s", "alice", summary="mine")
    assert (await resolve_agent_state(ctx, agent)).summary == "mine"


def test_ids_are_random_uuid4_hex() -> None:
    """Message and run ids keep the uuid4().hex form they always had (32 lowercase hex,
    version 4, RFC 4122 variant), without building a UUID object each time."""
    import uuid

    from hookagent.context import new_run_id
    from hookagent.messages import new_id

    ids = [new_id() for _ in range(2000)] + [new_run_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value and parsed.version == 4 and parsed.variant == uuid.RFC_4122
