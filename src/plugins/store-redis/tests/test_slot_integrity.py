"""Issue 13 on Redis: a state is bound to its slot, a newer schema is never overwritten, and a
save onto a damaged slot fails closed in the script (CorruptState, nothing written); every
load and save error names user, session and key."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from hookagent import AgentState, Msg
from hookagent.errors import CorruptState, StateSlotMismatch, UnsupportedSchemaVersion
from hookagent.state import History
from hookagent.store import UNCONDITIONAL, Fence
from hookagent.testing.corpus import HOSTILE_IDS
from hookagent_store_redis import RedisAgentStateStore, connect
from hookagent_store_redis.cache import chain
from hookagent_store_redis.testing import STANDALONE, new_prefix

from .test_store import Counting, _everything, turn

pytestmark = pytest.mark.anyio
SLOT = "user_id='u' session_id='s' key='agent_state'"
SAVE_FORMS = [(e, f) for e in (0, 1, UNCONDITIONAL) for f in (None, Fence(10**6, "me"))]


async def _saved(store: RedisAgentStateStore, turns: int = 1) -> AgentState:
    state = AgentState("s", "u")
    for i in range(turns):
        turn(state, i)
    await store.save_if_version("u", "s", state, 0)
    return state


def _keys(store: RedisAgentStateStore) -> tuple[str, str]:
    sk = store.layout.session("u", "s")
    return sk.head("agent_state"), sk.messages("agent_state")


async def _refused_everywhere(
    store: RedisAgentStateStore,
    state: AgentState,
    error: type[Exception],
    match: str = SLOT,
    forms: list[tuple[Any, Fence | None]] = SAVE_FORMS,
) -> None:
    """Every save form raises ``error`` naming the slot and leaves every key as it was."""
    before = await _everything(store)
    for expected, fence in forms:
        with pytest.raises(error, match=match) as info:
            await store.save_if_version("u", "s", state, expected, fence=fence)
        assert SLOT in str(info.value)
    assert await _everything(store) == before


async def test_a_state_of_another_slot_is_refused_before_any_round_trip() -> None:
    plain = connect(STANDALONE, prefix=new_prefix())
    proxy = Counting(plain.client)
    store = RedisAgentStateStore(proxy, prefix=plain.prefix)
    try:
        for state in (AgentState("s", "bob"), AgentState("x", "u"), AgentState("s", "")):
            for expected in (0, 3, UNCONDITIONAL):
                with pytest.raises(StateSlotMismatch, match=SLOT):
                    await store.save_if_version("u", "s", state, expected)
        assert proxy.calls == []  # nothing sent, so nothing written
        assert [k async for k in plain.client.scan_iter(match=f"{plain.prefix}:*")] == []
    finally:
        await plain.aclose()


async def test_a_head_naming_another_slot_loads_corrupt_and_is_never_overwritten(
    standalone_store: RedisAgentStateStore,
) -> None:
    store = standalone_store
    state = await _saved(store)
    head, _ = _keys(store)
    bob = orjson.loads(await store.client.hget(head, "d"))
    bob["user_id"] = "bob"  # bytes copied from bob's slot into u's
    await store.client.hset(head, "d", orjson.dumps(bob))
    store.forget("u", "s")
    with pytest.raises(CorruptState, match=f"{SLOT} holds a state of user_id='bob'"):
        await store.get_versioned("u", "s")
    await _refused_everywhere(store, state, CorruptState, f"another user_id.*{SLOT}")


async def test_a_newer_schema_is_never_overwritten(standalone_store: RedisAgentStateStore) -> None:
    store = standalone_store
    state = await _saved(store)
    head, _ = _keys(store)
    doc = orjson.loads(await store.client.hget(head, "d"))
    doc["schema_version"] = 99
    await store.client.hset(head, "d", orjson.dumps(doc))
    store.forget("u", "s")
    with pytest.raises(UnsupportedSchemaVersion, match=SLOT):
        await store.get_versioned("u", "s")
    turn(state, 1)
    await _refused_everywhere(store, state, UnsupportedSchemaVersion, f"{SLOT} was written at")
    # the same state at this hookagent's schema is written as before
    doc["schema_version"] = 1
    await store.client.hset(head, "d", orjson.dumps(doc))
    assert await store.save_if_version("u", "s", state, 1) == 2


async def _damage(store: RedisAgentStateStore, how: str) -> None:
    head, messages = _keys(store)
    c = store.client
    actions: dict[str, Any] = {
        "sections garbage": lambda: c.hset(head, "d", b"{not json"),
        "sections empty": lambda: c.hset(head, "d", b""),
        "sections missing": lambda: c.hdel(head, "d"),
        "sections with NUL": lambda: _edit_sections(c, head, b'"summary":"a\x00b"'),
        "sections not an object": lambda: c.hset(head, "d", b"[1]"),
        "count says more": lambda: c.hset(head, "n", 99),
        "rows missing": lambda: c.rpop(messages, 2),
        "rows added": lambda: c.rpush(messages, b'{"role":"user","text":"x"}'),
        "list of another type": lambda: c.delete(messages),  # then a string, below
        "orphan rows": lambda: c.delete(head),
        "write id missing": lambda: c.hdel(head, "w"),
        "ring garbage": lambda: c.hset(head, "r", b"abc"),
    }
    await actions[how]()
    if how == "list of another type":
        await c.set(messages, "damaged")


async def _edit_sections(client: Any, head: str, summary: bytes) -> None:
    d = await client.hget(head, "d")
    await client.hset(head, "d", d.replace(b'"summary":null', summary))


DAMAGES = [
    ("sections garbage", "encoded sections"),
    ("sections empty", "encoded sections"),
    ("sections missing", "encoded sections"),
    ("sections with NUL", "encoded sections"),
    ("sections not an object", "encoded sections"),
    ("count says more", "its head says 99 messages, the list holds 4"),
    ("rows missing", "its head says 4 messages, the list holds 2"),
    ("rows added", "its head says 4 messages, the list holds 5"),
    ("list of another type", "wrong type"),
    ("orphan rows", "missing, while the message list exists"),
    ("write id missing", "head"),
    ("ring garbage", "head"),
]


@pytest.mark.parametrize(("how", "says"), DAMAGES, ids=[d[0] for d in DAMAGES])
async def test_saves_onto_a_slot_that_does_not_load_fail_closed(
    topology_store: RedisAgentStateStore, how: str, says: str
) -> None:
    """What a load refuses, every save form refuses in the script, naming the slot."""
    store = topology_store
    state = await _saved(store)
    await _damage(store, how)
    store.forget("u", "s")
    with pytest.raises(CorruptState, match=SLOT):
        await store.get_versioned("u", "s")
    turn(state, 1)
    await _refused_everywhere(store, state, CorruptState, re.escape(says))


@pytest.mark.parametrize("row", [b"junk", b'{"role":"user","text":"a\x00"}', b""])
async def test_a_garbage_row_is_never_dropped_and_never_served(
    standalone_store: RedisAgentStateStore, row: bytes
) -> None:
    """A row damaged in place: every save that would drop or rewrite it is CorruptState with
    nothing written; an append (which touches no stored row and keeps the head's hash chain
    over the rows as written) leaves it as evidence, and every cold load raises."""
    store = standalone_store
    state = await _saved(store, turns=2)  # 8 messages, all committed
    _, messages = _keys(store)
    await store.client.lset(messages, 1, row)
    cut = AgentState("s", "u")
    turn(cut, 5)  # a rewrite (compaction): would delete the damaged row
    rewrites = [(e, f) for e, f in SAVE_FORMS if e != 0]  # a create is a VersionConflict
    await _refused_everywhere(store, cut, CorruptState, f"rows that do not match.*{SLOT}", rewrites)
    trimmed = AgentState("s", "u", context=list(state.context))
    trimmed.context.mark_committed()
    del trimmed.context[6:]  # an edit below the stored length: would trim the list
    before = await _everything(store)
    with pytest.raises(CorruptState, match=SLOT):
        await store.save_if_version("u", "s", trimmed, 1)
    assert await _everything(store) == before
    turn(state, 9)  # a pure append on top of the 8 stored rows
    assert await store.save_if_version("u", "s", state, 1) == 2
    assert await store.client.lindex(messages, 1) == row  # the evidence stays
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        with pytest.raises(CorruptState, match=SLOT):
            await other.get_versioned("u", "s")
    finally:
        await other.aclose()


async def test_load_errors_name_the_slot(standalone_store: RedisAgentStateStore) -> None:
    store = standalone_store
    await _saved(store)
    head, messages = _keys(store)
    good = await store.client.hget(head, "d")
    await store.client.hset(head, "d", b"{not json")
    store.forget("u", "s")
    with pytest.raises(CorruptState, match=f"{SLOT} does not decode: state head is not valid"):
        await store.get_versioned("u", "s")
    await store.client.hset(head, "d", good)
    rows = await store.client.lrange(messages, 0, -1)
    rows[0] = b'{"role": 5}'  # a row that is JSON but no message, its chain made to match
    await store.client.delete(messages)
    await store.client.rpush(messages, *rows)
    await store.client.hset(head, "c", chain("", rows))
    with pytest.raises(CorruptState, match=f"{SLOT} does not decode"):
        await store.get_versioned("u", "s")
    rows[0] = b"junk"  # and one whose chain does not match
    await store.client.lset(messages, 0, rows[0])
    with pytest.raises(CorruptState, match=f"message list of {SLOT} does not match"):
        await store.get_versioned("u", "s")


async def test_an_edited_history_saved_at_the_current_version_reaches_every_handle(
    standalone_store: RedisAgentStateStore,
) -> None:
    """A state with no committed prefix (decoded from JSON) rewrites the list in place."""
    store = standalone_store
    await _saved(store)
    other = connect(STANDALONE, prefix=store.prefix)
    try:
        assert (await other.get_versioned("u", "s")).version == 1  # caches the history
        edited = AgentState.from_json((await store.get_versioned("u", "s")).state.to_json())  # type: ignore[union-attr]
        edited.context = History([Msg.user("edited"), *list(edited.context)[1:]])
        assert await store.save_if_version("u", "s", edited, 1) == 2
        for handle in (store, other):
            got = await handle.get_versioned("u", "s")
            assert got.version == 2 and got.state.context[0].text == "edited"  # type: ignore[union-attr]
    finally:
        await other.aclose()


async def test_hostile_ids_pass_the_scripts_slot_check(
    standalone_store: RedisAgentStateStore,
) -> None:
    """The script compares the stored sections' ids (cjson) with the slot's: byte for byte
    what orjson wrote, for every id of the hostile corpus, as user and as session."""
    store = standalone_store
    for i, hostile in enumerate(HOSTILE_IDS):
        for user, session in ((hostile, f"s{i}"), (f"u{i}", hostile)):
            state = AgentState(session, user)
            await store.save_if_version(user, session, state, 0)
            state.context.append(Msg.user(hostile))
            assert await store.save_if_version(user, session, state, 1) == 2
            assert await store.save_if_version(user, session, state, UNCONDITIONAL) == 3
