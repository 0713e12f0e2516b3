"""Batch format 2 (``hookagent.sessionlog.format2``) and the logs written before it.

``fixtures/log_format1.json`` holds the commits of a 3-call session written by main's
batch encoding (format 1) and what main's ``read_after`` returned for them: they must read
back the same, rebuild the same history, and take new (format-2) commits after them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hookagent import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.codec import encode_msg, message_doc, msg_from_dict
from hookagent.errors import InvalidState, LogCorrupt
from hookagent.sessionlog import (
    InMemorySessionLog,
    LogEvent,
    LogHead,
    decode_batch,
    decode_rows,
    encode_batch,
    rows_after,
)
from hookagent.sessionlog.memory import _Commit
from hookagent.testing import ScriptedModel
from hookagent_session_log import SessionLogAdmin
from sessionlog_support import ctx, make_config

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "log_format1.json").read_text())
RUN, TURN = "779f32cab59b45a0974c310acc113759", "0cad62327ae446d182cf98e6c5e4a642"


def _fields(e: LogEvent) -> list[Any]:
    return [
        e.seq,
        e.event_id,
        e.type,
        e.occurred_at,
        dict(e.payload),
        e.required,
        e.run_id,
        e.turn_id,
    ]


def _planted() -> InMemorySessionLog:
    """A memory log holding the fixture's commits as main wrote them (bytes and head)."""
    log = InMemorySessionLog()
    s = log._make("alice", "s1")
    for first, last, batch_id, data in FIXTURE["commits"]:
        raw = data.encode()
        s.starts.append(first)
        s.commits.append(_Commit(first, last, batch_id, "d" + batch_id, raw))
        s.by_batch[batch_id] = len(s.commits) - 1
    s.head = LogHead(
        FIXTURE["head"], 4, None, 0.0, FIXTURE["commits"][-1][2], FIXTURE["checkpoint_seq"]
    )
    return log


def test_format_1_commits_read_back_as_main_read_them() -> None:
    assert all(not data.startswith("[2,") for *_, data in FIXTURE["commits"])
    events = [e for f, _, _, data in FIXTURE["commits"] for e in decode_batch(data.encode(), f)]
    assert [_fields(e) for e in events] == FIXTURE["read_after"]
    rows = rows_after(
        [(f, last, d.encode()) for f, last, _, d in FIXTURE["commits"]], 0, FIXTURE["head"]
    )
    assert [list(r) for r in rows] == FIXTURE["read_after"]


@pytest.mark.anyio
async def test_a_format_1_log_loads_and_takes_format_2_commits() -> None:
    log = _planted()
    config = make_config(log, ScriptedModel(["done"]))
    store = await config.kernel.store()
    state = (await store.get_versioned("alice", "s1")).state
    assert state is not None and [m.text for m in state.context] == FIXTURE["texts"]
    async with config.build() as agent:
        assert (await agent.call("and now?", ctx("s1", "alice"))).text == "done"
    raw = log._sessions["alice"]["s1"].commits
    assert raw[len(FIXTURE["commits"])].data.startswith(b"[2,")  # appended in format 2
    cold = make_config(log, ScriptedModel([]))  # a fresh process's cold load: both formats
    state = (await (await cold.kernel.store()).get_versioned("alice", "s1")).state
    assert state is not None
    assert [m.text for m in state.context] == [*FIXTURE["texts"], "and now?", "done"]
    events = await SessionLogAdmin(log).events("alice", "s1")
    assert [_fields(e) for e in events[: FIXTURE["head"]]] == FIXTURE["read_after"]
    assert events[-1].type == "run/finished" and events[-1].seq > FIXTURE["head"]


def _events() -> list[LogEvent]:
    use = Msg.assistant([ToolUseBlock("call_1", "lookup", {"key": 1})])
    tool = Msg("tool", [ToolResultBlock("call_1", "lookup", (TextBlock("v1"),))])
    return [
        LogEvent("run/started", {"agent_id": "a"}, False, RUN, TURN, occurred_at=1796163598.505151),
        LogEvent(
            "message/appended",
            {"m": Msg.user("look up 1")},
            True,
            RUN,
            TURN,
            occurred_at=1796163598.50524,
        ),
        LogEvent(
            "model/dispatch",
            {"purpose": "reasoning"},
            False,
            RUN,
            TURN,
            occurred_at=1796163598.5053914,
        ),
        LogEvent("message/appended", {"m": use}, True, RUN, TURN, occurred_at=1796163598.6),
        LogEvent("tool/dispatch", {"id": "call_1"}, True, RUN, TURN, occurred_at=1796163598.5),
        LogEvent("tool/result", {"id": "call_1", "m": tool}, True, None, "t2", occurred_at=2),
        LogEvent(
            "acme/note",
            {"n": [1, {"x": None}], "m": [1]},
            True,
            "r",
            None,
            event_id="e-1",
            occurred_at=3.25,
        ),
        LogEvent("acme/empty", {}, False, RUN, TURN, event_id="0" * 31 + "A", occurred_at=-0.0),
        LogEvent("run/finished", {"completed": True}, True, RUN, TURN, occurred_at=1.0e300),
    ]


def test_format_2_round_trips_every_envelope() -> None:
    events = _events()
    data = encode_batch(events)
    assert data.startswith(b"[2,")
    back = decode_batch(data, 7)
    want = [(e.type, e.event_id, e.occurred_at, e.required, e.run_id, e.turn_id) for e in events]
    assert [
        (e.type, e.event_id, e.occurred_at, e.required, e.run_id, e.turn_id) for e in back
    ] == want
    assert [type(e.occurred_at) for e in back] == [type(e.occurred_at) for e in events]
    assert [e.seq for e in back] == list(range(7, 16))
    for e, b in zip(events, back, strict=True):  # a Msg reads back as its message_doc
        assert dict(b.payload) == {
            k: message_doc(v) if type(v) is Msg else v for k, v in e.payload.items()
        }
    rows = decode_rows(data, 7)  # rows keep a message as its stored record
    assert rows[1][4]["m"] == orjson.loads(encode_msg(events[1].payload["m"]))
    assert msg_from_dict(rows[5][4]["m"]) == events[5].payload["m"] and rows[5][4]["id"] == "call_1"
    assert rows[6][4] == {"n": [1, {"x": None}], "m": [1]}  # user data, not a message
    assert encode_batch([attrs.evolve(e) for e in events]) == data  # deterministic


def test_format_2_bytes_are_bounded_per_event() -> None:
    """An envelope-only event costs its 32-hex id and a few bytes of framing; a message
    event its codec record and the same; the ids of the batch's run and turn once."""
    events = _events()[:5]
    data = encode_batch(events)
    records = sum(len(encode_msg(e.payload["m"])) for e in events if "m" in e.payload)
    payloads = sum(len(orjson.dumps(e.payload)) for e in events if "m" not in e.payload)
    framing = len(data) - records - payloads - 32 * (len(events) + 2)
    assert framing <= 12 * len(events) + 30, (framing, data)
    fixture = [e for f, _, _, d in FIXTURE["commits"] for e in decode_batch(d.encode(), f)]
    old = sum(len(d) for *_, d in FIXTURE["commits"])
    new = 0
    for f, last, _, _ in FIXTURE["commits"]:
        batch = [
            attrs.evolve(e, seq=0, payload=_as_msgs(e.payload))
            for e in fixture
            if f <= e.seq <= last
        ]
        new += len(encode_batch(batch))
    assert new <= 0.7 * old, (new, old)


def _as_msgs(payload: Any) -> dict[str, Any]:
    p = dict(payload)
    if type(p.get("m")) is dict:
        p["m"] = msg_from_dict(p["m"])
    return p


@pytest.mark.parametrize(
    "data",
    [
        b'[3,0,0,1.0,"",[0,0,0]]',  # a format this kernel does not know
        b'[2,0,0,1.0,"",[0,0,0]]',  # ids its events need are missing
        b'[2,null,null,1.0,"' + b"a" * 32 + b'",[99,0,0]]',  # an unknown type code
        b'[2,null,null,1.0,"' + b"a" * 32 + b'",[0,0,true]]',  # a bad time
        b'[2,null,null,1.0,"' + b"a" * 64 + b'",[0,0,0]]',  # an id no event uses
        b'[2,null,null,1.0,"",[0,"x",0,{},{"q":1}]]',  # unknown extras
        b'[2,null,null,1.0,"",[0,"x",0,{},{"p":{}}]]',  # extras for a list payload only
        b'[2,null,null,1.0,"",[0,"x",0,5]]',  # a payload that is no object
        b'[2,null,null,1.0,""]',  # no events
    ],
)
def test_a_bad_format_2_commit_is_log_corrupt(data: bytes) -> None:
    with pytest.raises(LogCorrupt):
        decode_rows(data, 1)


def test_a_message_event_with_a_bad_record_is_log_corrupt_when_read() -> None:
    data = b'[2,null,null,1.0,"",[0,"x",0,[99,"hi"]]]'
    assert decode_rows(data, 1)[0][4] == {"m": [99, "hi"]}  # stored as it is ...
    with pytest.raises(LogCorrupt):
        decode_batch(data, 1)  # ... and refused where it is structured


def test_an_event_that_is_not_json_data_is_refused() -> None:
    with pytest.raises(InvalidState):
        encode_batch([LogEvent("acme/x", {"v": object()})])
