"""The bulk decode (``decode_msgs``, ``hookagent._bulk``) gives what the per-record decode
(``decode_msg``) gives: the same values, of exactly the same classes, or the same typed error.

The bulk loop takes the common shapes inline and builds values through mutable twins whose
class is then set to the real one; these tests hold it to the strict decoder on the format
fixtures, on random messages, and on random damage to their records.
"""

from __future__ import annotations

import runpy
import weakref
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hookagent import InvalidState, Msg, TextBlock, ToolResultBlock, ToolUseBlock, codec
from hookagent.messages import new_id
from hypothesis import given, settings
from hypothesis import strategies as st

_HERE = Path(__file__).resolve().parent
_CASES = runpy.run_path(str(_HERE / "codec_cases.py"))
_FORMAT = runpy.run_path(str(_HERE / "test_codec_format.py"))
message = _FORMAT["message"]
json_value = _FORMAT["json_value"]


def _classes(value: Any) -> list[type]:
    """Every attrs value's class inside a message, in order (the twins must never show)."""
    out: list[type] = [type(value)]
    if attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            item = getattr(value, field.name)
            if type(item) is tuple:
                for inner in item:
                    out += _classes(inner)
    return out


def _per_record(records: list[Any]) -> list[Msg] | str:
    try:
        return [codec.decode_msg(r) for r in records]
    except InvalidState as exc:
        return str(exc)


def _bulk(records: list[Any]) -> list[Msg] | str:
    try:
        return codec.decode_msgs(records)
    except InvalidState as exc:
        return str(exc)


def _same(records: list[Any]) -> None:
    one, bulk = _per_record(records), _bulk(records)
    assert bulk == one
    if isinstance(one, list):
        assert isinstance(bulk, list)
        for a, b in zip(one, bulk, strict=True):
            assert _classes(a) == _classes(b)


def _workload(n: int) -> list[Msg]:
    """The four shapes of a workload call, the ones the bulk loop takes inline."""
    call = f"call_{n}"
    return [
        Msg.user(f"u{n}| look up key {n}"),
        Msg.assistant([ToolUseBlock(call, "lookup", {"key": n})]),
        Msg("tool", [ToolResultBlock(call, "lookup", (TextBlock(f"r{n}| value"),))]),
        Msg.assistant(f"a{n}| done", metadata={"generate_reason": "COMPLETED"}),
    ]


def test_the_fixtures_decode_the_same_in_bulk_and_one_by_one() -> None:
    expected: list[Msg] = _CASES["cases"]()
    v1 = Path(_CASES["V1_MESSAGES"]).read_bytes().splitlines()
    v2 = [codec.encode_msg(m) for m in expected]
    for records in (
        v1,
        v2,
        [r.decode() for r in v2],
        [x for pair in zip(v1, v2, strict=True) for x in pair],
    ):
        _same(records)
    assert codec.decode_msgs(v2) == expected


def test_workload_shapes_are_exact_frozen_values() -> None:
    msgs = [m for n in range(1, 4) for m in _workload(n)]
    got = codec.decode_msgs([codec.encode_msg(m) for m in msgs])
    assert got == msgs
    for a, b in zip(msgs, got, strict=True):
        assert _classes(a) == _classes(b)
        assert weakref.ref(b)() is b
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            b.role = "user"  # type: ignore[misc]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            b.content[0].type = "x"  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(st.lists(message, max_size=6), st.integers(1, 10**6))
def test_random_messages_decode_the_same_in_bulk(msgs: list[Msg], n: int) -> None:
    msgs = [*_workload(n), *msgs]
    records = [codec.encode_msg(m) for m in msgs]
    _same(records)
    assert codec.decode_msgs(records) == msgs


_PACKED = codec.encode_msg(Msg.user("x", id=new_id())).split(b",")[2].strip(b'"').decode()
_odd = st.one_of(
    json_value,
    st.sampled_from(
        [
            0,
            1,
            2,
            3,
            4,
            -1,
            True,
            False,
            2.0,
            3.0,
            "",
            "x",
            [],
            {},
            None,
            _PACKED,
            _PACKED[:21] + "B",
            _PACKED[:21] + "=",
            _PACKED[:20],
            _PACKED + "A",
            "é" * 22,
        ]
    ),
)


def _paths(doc: Any, at: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    out = [at]
    if type(doc) is list:
        for i, item in enumerate(doc):
            out += _paths(item, (*at, i))
    return out


def _replace(doc: Any, at: tuple[int, ...], value: Any) -> Any:
    if not at:
        return value
    doc = list(doc)
    doc[at[0]] = _replace(doc[at[0]], at[1:], value)
    return doc


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 10**6), st.integers(0, 3), st.data())
def test_damaged_records_fail_or_decode_the_same_in_bulk(n: int, which: int, data: Any) -> None:
    """Any element of a workload record replaced (or one added, or one dropped): the bulk
    decode and the per-record decode agree on the value or on the error."""
    records = [codec.encode_msg(m) for m in _workload(n)]
    doc = orjson.loads(records[which])
    action = data.draw(st.sampled_from(["replace", "append", "drop"]))
    at = data.draw(st.sampled_from(_paths(doc)[1:]))
    if action == "replace":
        doc = _replace(doc, at, data.draw(_odd))
    elif action == "append":
        doc = [*doc, data.draw(_odd)]
    else:
        doc = doc[:-1]
    records[which] = orjson.dumps(doc)
    _same(records)
