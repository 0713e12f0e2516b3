"""The stored message formats: format 2 is what is written, format 1 still reads.

Format 1 is one JSON object per message (what ``encode_msg`` wrote before, and what
``message_doc`` and state documents still hold); format 2 is the positional array of
``hookagent._compact``. These tests hold the bytes (a workload message's size, bounded), the
old records (fixtures captured from main), and the round trip over every message shape.
"""

from __future__ import annotations

import json
import runpy
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hookagent import (
    InvalidState,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    codec,
)
from hookagent.messages import new_id
from hypothesis import given, settings
from hypothesis import strategies as st

_CASES = runpy.run_path(str(Path(__file__).with_name("codec_cases.py")))


# ------------------------------------------------------------------------------ bytes


def _workload_call(n: int) -> tuple[list[Msg], list[dict[str, Any]]]:
    """One call of the standard workload (4 messages, 200-character texts) and the same
    messages as the peers' compact OpenAI chat-completions dicts (bench/bytes_ref.py)."""
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    user, tool, final = ((f"{p}{n}| " + words * 3)[:200] for p in "ura")
    call = f"call_{n}"
    now = time.time()
    msgs = [
        Msg.user(user, timestamp=now),
        Msg.assistant([ToolUseBlock(call, "lookup", {"key": n})], timestamp=now + 0.0001),
        Msg("tool", [ToolResultBlock(call, "lookup", (TextBlock(tool),))], timestamp=now + 2e-4),
        Msg.assistant(final, metadata={"generate_reason": "COMPLETED"}, timestamp=now + 3e-4),
    ]
    fn = {"name": "lookup", "arguments": json.dumps({"key": n})}
    ref = [
        {"role": "user", "content": user},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call, "type": "function", "function": fn}],
        },
        {"role": "tool", "tool_call_id": call, "content": tool},
        {"role": "assistant", "content": final},
    ]
    return msgs, ref


@pytest.mark.parametrize("n", [1, 999, 123_456])
def test_a_workload_call_is_stored_within_the_compact_json_bound(n: int) -> None:
    """Issue 15: bytes <= 1.1x the compact JSON of the same messages. Each record carries
    a 16-byte id and a timestamp the reference does not; the framing around them is a few
    bytes, not keys."""
    msgs, ref = _workload_call(n)
    sizes = [len(codec.encode_msg(m)) for m in msgs]
    compact = [len(json.dumps(d, separators=(",", ":"))) for d in ref]
    assert sum(sizes) <= 1.05 * sum(compact), (sizes, compact)
    # a user message: its text, 22 characters of id, the timestamp and 10 bytes of framing
    assert sizes[0] <= 200 + 22 + len(repr(msgs[0].timestamp)) + 10
    # the tool call: the call id, the tool name, the input, and under 60 bytes more
    assert sizes[1] <= len(f"call_{n}lookup") + len(json.dumps({"key": n})) + 60
    for msg, size in zip(msgs, sizes, strict=True):
        assert codec.decode_msg(codec.encode_msg(msg)) == msg
        assert size < len(orjson.dumps(codec.message_doc(msg))) - 60  # format 1 was bigger


def test_hex_ids_are_packed_and_other_ids_kept_verbatim() -> None:
    hex_id = new_id()
    packed = orjson.loads(codec.encode_msg(Msg.user("x", id=hex_id)))[2]
    assert type(packed) is str and len(packed) == 22
    for other in ["", "x", hex_id.upper(), hex_id[:-1], hex_id + "0", packed, " " + hex_id[1:]]:
        doc = orjson.loads(codec.encode_msg(Msg.user("x", id=other)))
        assert doc[2] == [other]
        assert codec.decode_msg(codec.encode_msg(Msg.user("x", id=other))).id == other


@pytest.mark.parametrize(
    "doc, where",
    [
        ([0, "x", "AAAAAAAAAAAAAAAAAAAAAB", 1.0], r"\[2\]"),  # non-canonical packed id
        ([0, "x", "AAAAAAAAAAAAAAAAAAAA=A", 1.0], r"\[2\]"),
        ([0, "x", "AAAAAAAAAAAAAAAAAAAAA", 1.0], r"\[2\]"),
        ([0, "x", ["a", "b"], 1.0], r"\[2\]"),
        ([0, "x", 5, 1.0], r"\[2\]"),
        ([4, "x", ["i"], 1.0], r"\[0\]"),
        ([True, "x", ["i"], 1.0], r"\[0\]"),
        ([0, 5, ["i"], 1.0], r"content"),
        ([0, "x", ["i"], "1.0"], r"\[3\]"),
        ([0, "x", ["i"], True], r"\[3\]"),
        ([0, "x", ["i"]], "4-6 elements"),
        ([0, "x", ["i"], 1.0, {}, "n", 7], "4-6 elements"),
        ([0, "x", ["i"], 1.0, []], r"\[4\]"),
        ([0, "x", ["i"], 1.0, {}, 5], r"\[5\]"),
        ([0, ["ok", [9, "x"]], ["i"], 1.0], r"\[1\]\[1\].*unknown block code 9"),
        ([0, [[1, "a", "b"]], ["i"], 1.0], r"\[1\]\[0\]"),
        ([0, [[2, "c", "f", [], 0]], ["i"], 1.0], r"\[1\]\[0\].*object"),
        ([0, [[2, "c", "f", {}, 2]], ["i"], 1.0], r"\[1\]\[0\].*state"),
        ([0, [[3, "c", "f", ["a", [1, "t"]]]], ["i"], 1.0], r"\[1\]\[0\]: output\[1\]"),
        ([0, [[3, "c", "f", 5]], ["i"], 1.0], r"\[1\]\[0\].*output"),
        ([0, [[3, "c", "f", "o", 4]], ["i"], 1.0], r"\[1\]\[0\].*state"),
        ([0, [[4, "u", "m", "x"]], ["i"], 1.0], r"\[1\]\[0\]"),
        ([0, [[5, 1]], ["i"], 1.0], r"\[1\]\[0\].*string"),
        ([0, [{"type": "text", "text": "a"}], ["i"], 1.0], r"\[1\]\[0\]"),
        ([0, [[False, "t"]], ["i"], 1.0], r"\[1\]\[0\].*integer"),
    ],
)
def test_a_wrong_format_2_record_is_one_typed_error_saying_where(doc: Any, where: str) -> None:
    with pytest.raises(InvalidState, match=where):
        codec.decode_msg(orjson.dumps(doc))
    with pytest.raises(InvalidState, match=where):
        codec.decode_msgs([codec.encode_msg(Msg.user("ok")), orjson.dumps(doc)])


def test_free_form_values_in_format_2_keep_the_depth_limit() -> None:
    deep: Any = 1
    for _ in range(codec.MAX_DEPTH):
        deep = {"k": deep}
    for doc in (
        [0, "x", ["i"], 1.0, {"m": deep}],
        [1, [[2, "c", "f", {"a": deep}]], ["i"], 1.0],
    ):
        with pytest.raises(InvalidState, match="deeper"):
            codec.decode_msg(orjson.dumps(doc))


# ------------------------------------------------------------------------------ format 1


def test_format_1_records_from_main_decode_to_the_same_messages() -> None:
    expected: list[Msg] = _CASES["cases"]()
    records = Path(_CASES["V1_MESSAGES"]).read_bytes().splitlines()
    assert len(records) == len(expected)
    assert all(r.startswith(b"{") for r in records)  # really the old format
    assert [codec.decode_msg(r) for r in records] == expected
    assert codec.decode_msgs(records) == expected
    assert codec.decode_msgs([r.decode() for r in records]) == expected
    assert [codec.msg_from_dict(orjson.loads(r)) for r in records] == expected
    # mixed with format 2 in one load (a history written partly before the change)
    mixed = [
        r if i % 2 else codec.encode_msg(m)
        for i, (r, m) in enumerate(zip(records, expected, strict=True))
    ]
    assert codec.decode_msgs(mixed) == expected
    # re-encoded, they are format 2 and decode to the same messages again
    again = [codec.encode_msg(m) for m in expected]
    assert all(r.startswith(b"[") for r in again)
    assert codec.decode_msgs(again) == expected
    # message_doc (what a session log embeds, and what a state document holds) is format 1
    assert [orjson.dumps(codec.message_doc(m)) for m in expected] == records


# ------------------------------------------------------------------------------ round trip

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | text
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
    max_leaves=8,
)
_S = runpy.run_path(str(Path(__file__).with_name("codec_strategies.py")))
message = _S["messages"](
    text,
    json_value,
    st.builds(new_id) | text | st.text("0123456789abcdefABCDEF", min_size=32, max_size=32),
    st.floats(-2e9, 2e9) | st.integers(-(2**53), 2**53),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(message, max_size=5))
def test_every_message_round_trips_through_format_2(msgs: list[Msg]) -> None:
    records = [codec.encode_msg(m) for m in msgs]
    assert all(r.startswith(b"[") for r in records)
    assert [codec.decode_msg(r) for r in records] == msgs
    assert codec.decode_msgs(records) == msgs
    # format 1 of the same messages decodes to the same values
    assert [codec.decode_msg(orjson.dumps(codec.message_doc(m))) for m in msgs] == msgs


def _paths(doc: Any, at: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    out = [at]
    if type(doc) is list:
        for i, item in enumerate(doc):
            out += _paths(item, (*at, i))
    return out


mutation = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 9),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
    st.lists(st.integers(0, 5), max_size=3),
    st.dictionaries(text, st.integers(-(2**63), 2**63 - 1), max_size=2),
)


@settings(max_examples=400, deadline=None)
@given(message, st.data())
def test_a_mutated_format_2_record_decodes_consistently_or_is_refused(
    msg: Msg, data: st.DataObject
) -> None:
    """Change one element anywhere in a record: it either decodes to a message that
    round-trips, or it is an ``InvalidState`` (never another exception, never half a value)."""
    doc = orjson.loads(codec.encode_msg(msg))
    at = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for i in at[:-1]:
        parent = parent[i]
    if data.draw(st.booleans()) or not parent:
        parent[at[-1]] = data.draw(mutation)
    else:
        del parent[at[-1]]
    try:
        got = codec.decode_msg(orjson.dumps(doc))
    except InvalidState:
        return
    assert codec.decode_msg(codec.encode_msg(got)) == got
