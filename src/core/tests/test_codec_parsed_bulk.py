"""``codec.msgs_from_dicts``: the bulk decoder over records parsed already (a session log's
cold rebuild parses them with their commits) gives what ``msg_from_dict`` gives for each,
values of exactly the same classes, or ``msg_from_dict``'s error for the first bad one."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hookagent import InvalidState, Msg, codec
from hypothesis import given, settings
from hypothesis import strategies as st

_HERE = Path(__file__).resolve().parent
_BULK = runpy.run_path(str(_HERE / "test_codec_bulk.py"))
_CASES = runpy.run_path(str(_HERE / "codec_cases.py"))
_classes, _workload, message = _BULK["_classes"], _BULK["_workload"], _BULK["message"]


def _one(docs: list[Any]) -> list[Msg] | str:
    try:
        return [codec.msg_from_dict(d) for d in docs]
    except InvalidState as exc:
        return str(exc)


def _same(docs: list[Any]) -> None:
    one = _one(docs)
    try:
        bulk: list[Msg] | str = codec.msgs_from_dicts(docs)
    except InvalidState as exc:
        bulk = str(exc)
    assert bulk == one
    if isinstance(one, list):
        assert isinstance(bulk, list)
        for a, b in zip(one, bulk, strict=True):
            assert _classes(a) == _classes(b)


def test_parsed_records_of_either_format_decode_as_one_by_one() -> None:
    expected: list[Msg] = _CASES["cases"]()
    v2 = [orjson.loads(codec.encode_msg(m)) for m in expected]
    v1 = [orjson.loads(r) for r in Path(_CASES["V1_MESSAGES"]).read_bytes().splitlines()]
    msgs = [m for n in (1, 7) for m in _workload(n)]
    work = [orjson.loads(codec.encode_msg(m)) for m in msgs]
    for docs in (v2, v1, work, [*work, *v1, *v2]):
        _same(docs)
    assert codec.msgs_from_dicts(v2) == expected
    assert codec.msgs_from_dicts(work) == msgs


def test_a_bad_parsed_record_raises_msg_from_dicts_error() -> None:
    good = [orjson.loads(codec.encode_msg(m)) for m in _workload(3)]
    for bad in ([99, "hi", "AAAAAAAAAAAAAAAAAAAAAA", 1.0], [1], "text", None):
        with pytest.raises(InvalidState):
            codec.msgs_from_dicts([*good, bad])
        _same([*good, bad])


@settings(max_examples=100, deadline=None)
@given(st.lists(message, max_size=6))
def test_random_parsed_records_decode_the_same(msgs: list[Msg]) -> None:
    _same([orjson.loads(codec.encode_msg(m)) for m in msgs])
