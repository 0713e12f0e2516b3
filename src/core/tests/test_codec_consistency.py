"""Issue 13's codec rules: what decodes, encodes (and round-trips); only our schema is
written; size caps are checked before the big allocation; G16 at the 8 MiB cap; a state
decoded from JSON has no committed prefix."""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest
from hookagent import AgentState, Msg, StateTooLarge, UnsupportedSchemaVersion, codec
from hookagent._bigstate import SPLIT_FROM, decode_split
from hookagent.state import SCHEMA_VERSION
from hookagent.store import InMemoryAgentStateStore
from hookagent.testing import full_state

pytestmark = pytest.mark.anyio


def test_a_section_named_empty_round_trips() -> None:
    doc = orjson.loads(full_state("u", "s").to_json())
    doc[""] = {"k": [1, 2]}
    state = AgentState.from_json(orjson.dumps(doc))
    assert state.extensions[""] == {"k": [1, 2]}
    assert AgentState.from_json(state.to_json()).extensions[""] == {"k": [1, 2]}


@pytest.mark.parametrize("bad", [0, 2, 99, -1, "1", None])
def test_only_our_schema_version_is_written(bad: Any) -> None:
    state = full_state("u", "s")
    state.schema_version = bad
    for encode in (codec.encode_state, codec.encode_head, AgentState.to_json):
        with pytest.raises(UnsupportedSchemaVersion, match="writes only"):
            encode(state)


def test_a_state_from_json_has_no_committed_prefix() -> None:
    state = AgentState.from_json(full_state("u", "s").to_json())
    assert state.context.unchanged_prefix == 0


async def test_an_edit_through_json_is_saved_at_the_current_version() -> None:
    store = InMemoryAgentStateStore()
    state = AgentState("s", "u")
    state.context.extend([Msg.user("one"), Msg.assistant("two")])
    await store.save_if_version("u", "s", state, 0)
    doc = orjson.loads((await store.get_versioned("u", "s")).state.to_json())  # type: ignore[union-attr]
    doc["context"][0]["content"][0]["text"] = "ONE"
    assert await store.save_if_version("u", "s", AgentState.from_json(orjson.dumps(doc)), 1) == 2
    for handle in (store, store.another_handle()):
        got = await handle.get_versioned("u", "s")
        assert got.version == 2
        assert [m.text for m in got.state.context] == ["ONE", "two"]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- size caps

BIG = 50 * 1024 * 1024


def _peak(fn: Any) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _refused(fn: Any) -> None:
    with pytest.raises(StateTooLarge):
        fn()


def test_refusing_a_50_mb_message_allocates_little() -> None:
    big = "x" * BIG
    msg = Msg.user(big)
    state = AgentState("s", "u")
    state.context.append(msg)
    doc = orjson.dumps({"schema_version": SCHEMA_VERSION, "session_id": "s", "context": []})
    padded = doc + b" " * BIG
    cases = {
        "encode_msg": lambda: _refused(lambda: codec.encode_msg(msg)),
        "encode_state": lambda: _refused(lambda: codec.encode_state(state)),
        "to_json": lambda: _refused(state.to_json),
        "encode_head": lambda: _refused(lambda: codec.encode_head(AgentState("s", summary=big))),
        "dumps": lambda: _refused(lambda: codec.dumps({"v": big})),
        "decode_state str": lambda: _refused(lambda: codec.decode_state(big)),
        "decode_state bytes": lambda: _refused(lambda: codec.decode_state(padded)),
        "decode_msg": lambda: _refused(lambda: codec.decode_msg(big)),
    }
    for name, case in cases.items():
        peak = _peak(case)
        assert peak <= 2 * BIG, (name, peak)
        assert peak < BIG // 10, (name, peak)  # in fact: nothing near the input's size


async def test_refusing_a_50_mb_message_in_a_save_writes_nothing() -> None:
    store = InMemoryAgentStateStore()
    await store.save_if_version("u", "s", AgentState("s", "u", "kept"), 0)
    state = AgentState("s", "u")
    state.context.append(Msg.user("x" * BIG))
    tracemalloc.start()
    try:
        with pytest.raises(StateTooLarge):
            await store.save_if_version("u", "s", state, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BIG // 10
    got = await store.get_versioned("u", "s")
    assert got.version == 1 and got.state is not None and got.state.summary == "kept"


def capped_state() -> bytes:
    """A state at the 8 MiB cap: ~64k small messages, as G16 asks."""
    state = AgentState("s", "u")
    state.context.extend(
        Msg.user(f"m{i}", id=f"{i:032x}", timestamp=1.0e9 + i) for i in range(67_100)
    )
    data = codec.encode_state(state)
    assert codec.MAX_STATE_BYTES - 20_000 < len(data) <= codec.MAX_STATE_BYTES
    return data


def test_g16_a_state_at_the_cap_loads_at_under_10x_its_size() -> None:
    data = capped_state()
    tracemalloc.start()
    try:
        state = codec.decode_state(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(state.context) == 67_100 and state.context.unchanged_prefix == 0
    assert peak < 10 * len(data), peak / len(data)
    assert state == codec.decode_state(orjson.dumps(orjson.loads(data)))


def _split(data: bytes) -> AgentState | None:
    return decode_split(data, codec._check_free, codec.state_from_dict, codec._PARSE_CHUNK)


def test_the_chunked_decode_agrees_with_the_whole_parse() -> None:
    """The big-state path gives what one parse gives, or declines (for any form but ours)."""
    data = capped_state()
    split = _split(data)
    assert split is not None
    whole = codec.state_from_dict(orjson.loads(data))
    assert split == whole and split.extensions == whole.extensions
    # forms it must decline: pretty-printed, another field order, a marker-like history
    assert _split(orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2)) is None
    doc = orjson.loads(data)
    reordered = {"context": doc.pop("context"), **doc}
    assert _split(orjson.dumps(reordered)) is None
    assert codec.decode_state(orjson.dumps(reordered)) == whole
    # a message that holds the separators in its text and metadata
    state = AgentState("s", "u")
    tricky = '}],"permission_context":{},{"role":"user"'
    state.context.extend(
        Msg.user(tricky * 100, metadata={"m": [{"role": 1}, {"x": [{"permission_context": 2}]}]})
        for _ in range(400)
    )
    out = codec.encode_state(state)
    assert len(out) > SPLIT_FROM and codec.decode_state(out) == state
