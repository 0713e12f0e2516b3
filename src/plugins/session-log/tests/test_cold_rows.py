"""A cold rebuild from raw rows (``Projection.apply_rows``): its messages are structured
all at once (``codec.msgs_from_dicts``) and it ends where applying the events one by one
ends; a damaged message still fails closed, naming its event."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from hookagent.codec import message_doc
from hookagent.errors import LogCorrupt
from hookagent.sessionlog import LogEvent, decode_batch, encode_batch, rows_after
from hookagent_session_log import projection as projection_mod
from hookagent_session_log.projection import Projection

RUN, TURN = "a" * 32, "b" * 32


def _call(n: int, *, finish: bool = True) -> list[list[LogEvent]]:
    """One W1 call's four commits (and, for a call cut short, no end)."""
    call = f"call_{n}"
    use = Msg.assistant([ToolUseBlock(call, "lookup", {"key": n})])
    tool = Msg("tool", [ToolResultBlock(call, "lookup", (TextBlock(f"r{n}"),))])

    def ev(kind: str, payload: dict[str, Any], required: bool = False) -> LogEvent:
        return LogEvent(kind, payload, required, RUN, TURN, occurred_at=1.5e9 + n)

    commits = [
        [ev("run/started", {}), ev("message/appended", {"m": Msg.user(f"u{n}")}, True)],
        [ev("message/appended", {"m": use}, True), ev("tool/dispatch", {"id": call}, True)],
        [ev("message/appended", {"m": tool}, True), ev("model/dispatch", {})],
    ]
    if finish:
        done = Msg.assistant(f"a{n}")
        commits.append(
            [ev("message/appended", {"m": done}, True), ev("run/finished", {"completed": True})]
        )
    return commits


def _commits(batches: list[list[LogEvent]]) -> tuple[list[tuple[int, int, bytes]], int]:
    out, seq = [], 1
    for events in batches:
        out.append((seq, seq + len(events) - 1, encode_batch(events)))
        seq += len(events)
    return out, seq - 1


def _session() -> list[list[LogEvent]]:
    doc = {"m": message_doc(Msg.user("a format-1 document"))}  # a message as a dict
    checkpoint = LogEvent("state/checkpoint", {"state": {"x": 1}, "base": 0}, True)
    extra = [[LogEvent("message/appended", doc, True), checkpoint]]
    cut = _call(3, finish=False)[:2]  # dispatched, no outcome: uncertain
    result = LogEvent(
        "tool/result",
        {"id": "call_9", "m": Msg("tool", [ToolResultBlock("call_9", "f", (TextBlock("ok"),))])},
        True,
    )
    return [*_call(1), *extra, *_call(2), *cut, [result]]


def _state(p: Projection) -> tuple[Any, ...]:
    return (
        p.seq,
        p.messages,
        p.head_doc,
        p.head_bytes,
        p.checkpoint_seq,
        p.dispatched,
        p.results,
        p.suspended,
        p.completed_turns,
    )


def test_apply_rows_ends_where_the_events_one_by_one_end(monkeypatch: pytest.MonkeyPatch) -> None:
    commits, head = _commits(_session())
    events = [e for first, _, data in commits for e in decode_batch(data, first)]
    one = Projection("u", "s")
    one.apply(events)
    calls: list[int] = []
    bulk = projection_mod.msgs_from_dicts
    monkeypatch.setattr(
        projection_mod, "msgs_from_dicts", lambda docs: calls.append(len(docs)) or bulk(docs)
    )
    for after in (0, 3, 9, head - 1):
        got = Projection("u", "s")
        if after:  # a warm start: the rows up to ``after`` applied already
            got.apply(events[:after])
        calls.clear()
        got.apply_rows(rows_after(commits, 0, head))
        assert _state(got) == _state(one), after
        n = sum(1 for e in events[after:] if e.type == "message/appended")
        assert calls == ([n] if n else [])  # every message in one call
    assert one.dispatched == {"call_3": 22} and "call_9" in one.results  # both kept


def test_a_damaged_message_fails_closed_naming_its_event() -> None:
    commits, head = _commits(_call(1))
    bad = b'[2,null,null,1.0,"",[0,"x",0,[99,"hi","AAAAAAAAAAAAAAAAAAAAAA",1.0]]]'
    commits.append((head + 1, head + 1, bad))
    rows = rows_after(commits, 0, head + 1)  # read as stored: structured where applied
    p = Projection("u", "s")
    with pytest.raises(LogCorrupt, match=f"event {head + 1} "):
        p.apply_rows(rows)
    assert p.seq == head  # applied up to the damage, as one by one


def test_rows_out_of_order_apply_as_one_by_one() -> None:
    """A backend's rows arrive in seq order; if one did not, a row at or below the seq
    reached is skipped (as ``apply`` skips it), and the messages after it stay with their
    own rows."""
    commits, head = _commits(_call(1) + _call(2))
    rows = rows_after(commits, 0, head)
    odd = [rows[0], rows[3], rows[1], rows[2], *rows[4:], rows[5]]  # seqs 1, 4, 2, 3, 5...
    bulk, each = Projection("u", "s"), Projection("u", "s")
    bulk.apply_rows(odd)
    each._apply_each(odd)
    assert _state(bulk) == _state(each)
    assert [m.text for m in bulk.messages][:2] == ["", "a1"]  # seqs 2, 3 (u1, the use) skipped
