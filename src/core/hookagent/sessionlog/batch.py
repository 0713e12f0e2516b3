"""One commit's bytes: the events of a batch, encoded once, compared by digest.

Written in format 2 (``format2``: one positional array, a message as the codec's record);
format 1 (a list of event objects, or ``{"v": 1, "run", "turn", "e"}``) is still read. A
payload value that is a ``Msg`` (or a list of them) reads back through ``decode_batch``
as the codec's message document (a dict), in either format. A backend stores a commit as
opaque bytes (``encode_batch``) with its first seq, and gives them back to
``decode_batch``; it never parses them. The encoding is deterministic, so a retried batch
(the same ``LogEvent`` values) has the same ``batch_digest`` and the idempotency rule is a
comparison of two short strings.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import orjson

from .._limits import MAX_DEPTH, _parse, check_depth
from ..codec import gc_paused, message_doc, msg_from_dict
from ..errors import CorruptState, InvalidState, LogCorrupt, StateTooLarge
from ..messages import Msg
from .base import LOG_SCHEMA_VERSION, LogEvent
from .format2 import FORMAT, decode_events, encode_events
from .format2 import Row as Row

MAX_BATCH_BYTES = 8 * 1024 * 1024
"""Largest commit, in encoded bytes (a state's own limit)."""
MAX_BATCH_EVENTS = 10_000
BATCH_DEPTH = MAX_DEPTH + 3
"""Nesting allowed in a batch: a state's limit plus the envelope's three levels (list,
event, payload), so whatever a state may hold, an event may carry, and what is written
is what a read accepts."""
_KEYS = frozenset({"v", "id", "t", "r", "run", "turn", "at", "p"})
_HEADER = frozenset({"v", "run", "turn", "e"})
_NUMBERS = (int, float)
_TYPE, _PAYLOAD, _REQUIRED, _RUN, _TURN, _ID, _AT, _SEQ, _VERSION = (
    LogEvent.__dict__[f.name].__set__ for f in attrs.fields(LogEvent)
)  # the slot setters, in field order: they skip the frozen __setattr__
_EMPTY: dict[str, Any] = {}
_SCALARS = frozenset({str, int, float, bool, type(None)})


def check_type(kind: object) -> str:
    """An event type: ``area/name``, printable, at most 128 characters."""
    if (
        not isinstance(kind, str)
        or not 3 <= len(kind) <= 128
        or "/" not in kind.strip("/")
        or not kind.isprintable()
        or kind != kind.strip()
    ):
        raise InvalidState(
            f"an event type is 'area/name' (message/appended, acme/review_note), got {kind!r}"
        )
    return kind


def _check(event: LogEvent) -> None:
    if not isinstance(event, LogEvent):
        raise InvalidState(f"a batch holds LogEvent values, got {type(event).__name__}")
    check_type(event.type)
    if event.schema_version != LOG_SCHEMA_VERSION:
        raise InvalidState(
            f"event schema_version {event.schema_version} is not {LOG_SCHEMA_VERSION}"
        )
    if (
        type(event.required) is not bool
        or not isinstance(event.event_id, str)
        or not event.event_id
    ):
        raise InvalidState(f"event {event.type}: required is a bool and event_id a non-empty str")
    for name in ("run_id", "turn_id"):
        if getattr(event, name) is not None and not isinstance(getattr(event, name), str):
            raise InvalidState(f"event {event.type}: {name} is a str or None")
    if type(event.occurred_at) not in (int, float) or not math.isfinite(event.occurred_at):
        # NaN or inf would be written as null, and the commit could never be read back
        raise InvalidState(f"event {event.type}: occurred_at is a finite number")


def _payload_doc(event: LogEvent, values: Any) -> dict[str, Any]:
    """A payload as JSON data: a ``Msg`` value as its ``message_doc`` (format 1's rule)."""
    payload: dict[str, Any] = {}
    for key, value in values.items():
        if type(value) in _SCALARS:  # no nesting to check (most of a recorder's payloads)
            payload[key] = value
        elif type(value) is Msg:  # the codec's document, bounded by construction
            payload[key] = message_doc(value)
        elif type(value) is list and value and all(type(m) is Msg for m in value):
            payload[key] = [message_doc(m) for m in value]
        else:
            check_depth(value, BATCH_DEPTH - 3, where=f"event {event.type} payload")
            payload[key] = value
    return payload


def encode_batch(events: Sequence[LogEvent]) -> bytes:
    """The commit's bytes (seqs are not in them: they are the commit's position)."""
    if not isinstance(events, Sequence) or isinstance(events, (str, bytes)):
        raise InvalidState(f"a batch is a sequence of LogEvent, got {type(events).__name__}")
    if not 1 <= len(events) <= MAX_BATCH_EVENTS:
        raise InvalidState(f"a batch holds 1 to {MAX_BATCH_EVENTS} events, got {len(events)}")
    for e in events:
        _check(e)
    data = encode_events(events, _payload_doc)
    if len(data) > MAX_BATCH_BYTES:
        raise StateTooLarge(
            f"a log batch is {len(data)} bytes, over the limit of {MAX_BATCH_BYTES}"
        )
    return data


class BuiltBatch(tuple):  # type: ignore[type-arg]  # tuple[LogEvent, ...]
    """A batch encoded where it was built, by a writer that made every envelope itself
    (the session-log recorder: catalogue types, its own ids, clock and run ids): ``data``
    and ``digest`` are what ``encode_batch`` and ``batch_digest`` give for these events,
    and ``rules.encode_commit`` takes them as they are instead of checking and encoding
    the envelopes a second time. Only ``built_batch`` makes one; an application's events
    (a list of ``LogEvent``) keep every check."""

    data: bytes
    digest: str


def built_batch(
    events: Sequence[LogEvent], records: list[bytes | None] | None = None
) -> BuiltBatch:
    """``encode_batch``'s bytes (the same format, byte for byte) for events the caller
    built itself, without the envelope checks; payload values are encoded and
    depth-checked exactly as ``encode_batch`` does. ``records`` (a list, emptied first)
    gets each event's message record as written, None where it has none
    (``format2.encode_events``)."""
    if not 1 <= len(events) <= MAX_BATCH_EVENTS:
        raise InvalidState(f"a batch holds 1 to {MAX_BATCH_EVENTS} events, got {len(events)}")
    if records is not None:
        records.clear()
    data = encode_events(events, _payload_doc, records)
    if len(data) > MAX_BATCH_BYTES:
        raise StateTooLarge(
            f"a log batch is {len(data)} bytes, over the limit of {MAX_BATCH_BYTES}"
        )
    out = BuiltBatch(events)
    out.data, out.digest = data, batch_digest(data)
    return out


def batch_digest(data: bytes) -> str:
    """What the idempotency rule compares: the same batch encodes to the same digest."""
    return hashlib.sha256(data).hexdigest()[:40]


def decode_rows(data: bytes | str, first_seq: int, *, where: str = "log") -> list[Row]:
    """The events of a stored commit (format 2 or 1) as ``Row`` tuples numbered from
    ``first_seq``; ``LogCorrupt`` if the bytes are not what ``encode_batch`` writes.

    A format-2 message event's ``payload["m"]`` is the message's stored record (a JSON
    array, ``codec.msg_from_dict`` reads it) where ``decode_batch`` gives ``message_doc``:
    a cold projection structures it once, not twice."""
    return _decode(data, first_seq, where, None)


# A commit this large (a history segment: 256 messages, ~60 KB) is decoded with the cyclic
# collector paused: its tens of thousands of new objects would otherwise set off full
# collections over every object the load has built so far (on the Redis log, 20-28 ms of a
# 4,000-message cold load). The decoded documents hold no reference cycles.
_BULK_BYTES = 16 * 1024


def _decode(data: bytes | str, first_seq: int, where: str, marks: list[int] | None) -> list[Row]:
    if len(data) < _BULK_BYTES:
        return _decode_now(data, first_seq, where, marks)
    with gc_paused():
        return _decode_now(data, first_seq, where, marks)


def _decode_now(
    data: bytes | str, first_seq: int, where: str, marks: list[int] | None
) -> list[Row]:
    try:
        # orjson refuses nesting past 1,024 levels; what the projection uses is checked
        # again where it is structured (messages, the checkpoint's state)
        if type(data) is bytes and data[:3] == b"[2," and len(data) <= MAX_BATCH_BYTES:
            docs = orjson.loads(data)  # format 2's bytes: _parse's checks hold already
        else:
            docs = _parse(data, limit=MAX_BATCH_BYTES, what="log batch")
    except orjson.JSONDecodeError as exc:
        raise LogCorrupt(f"{where}: commit at seq {first_seq} is unreadable: {exc}") from None
    except (CorruptState, StateTooLarge) as exc:
        raise LogCorrupt(f"{where}: commit at seq {first_seq} is unreadable: {exc}") from None
    if type(docs) is list and docs and type(docs[0]) is int:
        if docs[0] != FORMAT:
            raise LogCorrupt(f"{where}: commit at seq {first_seq} has format {docs[0]!r}")
        return decode_events(docs, first_seq, where, marks)
    run0 = turn0 = None
    if type(docs) is dict and docs.keys() <= _HEADER and "e" in docs:
        if docs.get("v") != LOG_SCHEMA_VERSION:
            raise LogCorrupt(f"{where}: commit at seq {first_seq} has version {docs.get('v')!r}")
        run0, turn0 = docs.get("run"), docs.get("turn")
        if ("run" in docs and type(run0) is not str) or ("turn" in docs and type(turn0) is not str):
            raise LogCorrupt(f"{where}: commit at seq {first_seq} has a bad header")
        docs = docs["e"]
    if type(docs) is not list or not docs:
        raise LogCorrupt(f"{where}: commit at seq {first_seq} is not a list of events")
    out: list[Row] = []
    append = out.append
    seq = first_seq
    for doc in docs:
        if type(doc) is not dict or not doc.keys() <= _KEYS:
            raise LogCorrupt(f"{where}: event at seq {seq} is not an event envelope")
        get = doc.get
        eid, kind, at = get("id"), get("t"), get("at")
        payload, required = get("p", _EMPTY), get("r", True)
        run, turn = get("run", run0), get("turn", turn0)
        if (
            type(eid) is not str
            or type(kind) is not str
            or type(at) not in _NUMBERS
            or type(payload) is not dict
            or type(required) is not bool
            or (run is not None and type(run) is not str)
            or (turn is not None and type(turn) is not str)
        ):
            raise LogCorrupt(f"{where}: event at seq {seq} is not an event envelope")
        at_: float = at  # type: ignore[assignment]  # (checked: an int or a float)
        if "v" in doc and doc["v"] != LOG_SCHEMA_VERSION:
            raise LogCorrupt(f"{where}: event at seq {seq} has schema version {doc['v']!r}")
        append((seq, eid, kind, at_, payload if payload is not _EMPTY else {}, required, run, turn))
        seq += 1
    return out


def decode_batch(data: bytes | str, first_seq: int, *, where: str = "log") -> list[LogEvent]:
    """The events of a stored commit, numbered from ``first_seq``; ``LogCorrupt`` if the
    bytes are not what ``encode_batch`` writes."""
    if len(data) < _BULK_BYTES:
        return _events(data, first_seq, where)
    with gc_paused():
        return _events(data, first_seq, where)


def _events(data: bytes | str, first_seq: int, where: str) -> list[LogEvent]:
    out: list[LogEvent] = []
    make = object.__new__
    marks: list[int] = []
    rows = _decode(data, first_seq, where, marks)
    for i in marks:  # the public form of a message is its message_doc, in either format
        payload = rows[i][4]
        try:
            payload["m"] = message_doc(msg_from_dict(payload["m"], where=f"event {rows[i][0]}"))
        except (InvalidState, TypeError, ValueError) as exc:
            raise LogCorrupt(f"{where}: event at seq {rows[i][0]}: {exc}") from None
    for seq, eid, kind, at, payload, required, run, turn in rows:
        # the envelope is checked by decode_rows: build the frozen event without __init__
        event = make(LogEvent)
        _TYPE(event, kind)
        _PAYLOAD(event, payload)
        _REQUIRED(event, required)
        _RUN(event, run)
        _TURN(event, turn)
        _ID(event, eid)
        _AT(event, at)
        _SEQ(event, seq)
        _VERSION(event, LOG_SCHEMA_VERSION)
        out.append(event)
    return out


def rows_after(
    commits: Iterable[tuple[int, int, bytes]], seq: int, head: int, *, where: str = "log"
) -> list[Row]:
    """The rows with ``seq < row seq <= head`` of ``commits`` (first_seq, last_seq, bytes),
    in order from the commit holding ``seq + 1``, with the checks every ``read_after``
    makes: ``LogCorrupt`` on a gap, on a commit whose events are not its recorded seqs, on
    a head whose commit is missing. A backend's cold-read fast path (``read_rows_after``):
    thousands of commits at once, decoded with the cyclic collector paused (``_decode``)
    when they are already read (a list or tuple); an iterator that reads as it goes (the
    file log's preads) runs with it on, as the collector is never paused across I/O."""
    if not isinstance(commits, (list, tuple)):
        return _rows_after(commits, seq, head, where)
    with gc_paused():
        return _rows_after(commits, seq, head, where)


def _rows_after(
    commits: Iterable[tuple[int, int, bytes]], seq: int, head: int, where: str
) -> list[Row]:
    out: list[Row] = []
    expect = seq + 1
    started = False
    for first, last, data in commits:
        if first > head:
            break  # an orphan: never read
        if not started and first < expect:
            expect = first  # the commit holding seq + 1 starts before it
        started = True
        if first != expect:
            raise LogCorrupt(f"{where}: seqs {expect}..{first - 1} are missing")
        rows = decode_rows(data, first, where=where)
        if first + len(rows) - 1 != last:
            raise LogCorrupt(f"{where}: the commit at seq {first} does not match its record")
        expect = last + 1
        if first > seq and last <= head:
            out += rows
        else:
            out += [r for r in rows if seq < r[0] <= head]
    if head > seq and (not out or out[-1][0] != head):
        raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
    return out


def point_read(
    head: int, commit: tuple[int, int, bytes] | None, seq: int, *, where: str = "log"
) -> list[LogEvent]:
    """``read_after(seq, 1)`` from what a backend's ``read_commits_after(..., [seq])``
    returned: the head's seq and the raw commit holding ``seq + 1`` (first_seq, last_seq,
    bytes; None if it has none), with ``read_after``'s checks: ``LogCorrupt`` on a gap
    before ``seq + 1``, on a commit whose events are not its recorded seqs, on a head whose
    commit is missing. A commit past the head (an orphan) is never read. Decoding apart
    from the read lets a cold load read every segment at once and decode them in one
    pause of the collector."""
    if commit is not None and commit[0] <= head:
        first, last, data = commit
        if first > seq + 1:
            raise LogCorrupt(f"{where}: seqs {seq + 1}..{first - 1} are missing")
        events = decode_batch(data, first, where=where)
        if first + len(events) - 1 != last:
            raise LogCorrupt(f"{where}: the commit at seq {first} does not match its record")
        for e in events:
            if seq < e.seq <= head:
                return [e]
    if head > seq:
        raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
    return []


def batch_has_checkpoint(events: Sequence[LogEvent], first_seq: int, kind: str) -> int:
    """The seq of the last event of type ``kind`` in the batch, or 0."""
    for i in range(len(events) - 1, -1, -1):
        if events[i].type == kind:
            return first_seq + i
    return 0
