"""Batch format 2: a commit as one positional JSON array, messages in the codec's records.

Format 1 spelled every event as an object (``id``, ``t``, ``at``, ``p``: about 90 bytes of
envelope) and every message as the codec's format-1 object; a W1 call's nine events were
~2.7 kB. Format 2 writes what a reader cannot infer, once:

``[2, run, turn, t0, ids, event, ...]``

* ``run``/``turn``: the first event's ids (``0``: the next 32 characters of ``ids``; a
  str; null).
* ``t0``: the first event's ``occurred_at``; ``ids``: the 32-hex ids (``new_id``'s form)
  concatenated, in order (one string: a slice each to read, no quotes or commas).
* an event is ``[type, id, at]``, then optionally a payload, then optionally extras:
  ``type`` a code of ``TYPES`` (its default ``required`` in ``_REQUIRED``) or the type's
  str (required by default); ``id`` ``0`` (packed, in order) or the id's str; ``at`` an int
  ``k`` for ``t0 + k * ulp(t0)`` (exact: written only where it reads back equal) or
  ``[at]`` as written; the payload a dict (as in format 1: a ``Msg`` value as its
  ``message_doc``) or a list: ``{"m": <that message>}`` with the message as its format-2
  record (``codec.encode_msg``); extras ``{"r": required, "run": .., "turn": .., "p": {the
  payload's other keys, beside a list's "m"}}`` only where they differ.

``TYPES`` only grows (a stored code never changes meaning). Format 1 is still read
(``batch.decode_rows``); the event envelope's ``schema_version`` is the same in both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import orjson

from ..codec import encode_msg
from ..errors import InvalidState, LogCorrupt
from ..messages import Msg
from .base import LogEvent

FORMAT = 2
TYPES = (
    "message/appended",
    "model/dispatch",
    "tool/dispatch",
    "tool/result",
    "run/started",
    "run/finished",
    "state/checkpoint",
    "context/replaced",
    "tool/suspended",
    "recovery/applied",
    "model/end",
    "interaction/requested",
    "interaction/resolved",
    "task/changed",
    "plan/changed",
    "permission/changed",
    "section/changed",
    "admin/updated",
    "import/baseline",
    "compaction/applied",
)
"""Type codes (append only: a stored code keeps its meaning)."""
_REQUIRED = tuple(
    t
    in {
        "message/appended",
        "tool/dispatch",
        "tool/result",
        "state/checkpoint",
        "context/replaced",
        "tool/suspended",
        "recovery/applied",
    }
    for t in TYPES
)
"""Each code's ``required`` when the event does not say (the catalogue's rule)."""
_CODE = {t: i for i, t in enumerate(TYPES)}
_INFO = {i: (t, _REQUIRED[i]) for i, t in enumerate(TYPES)}
_BAD = object()
_EXTRA = frozenset({"r", "run", "turn", "p"})
_NUMBERS = (int, float)
_SPAN = float(2**53)
_NEAR = 2.0**31  # a time further from t0 is written as it is


_HEX = frozenset("0123456789abcdef")


def _packed(value: str) -> str | None:
    """A lowercase 32-hex id (``new_id``'s form), else None."""
    return value if len(value) == 32 and _HEX.issuperset(value) else None


def _at(at: float, t0: float, q: float) -> Any:
    """``at`` as an offset ``k`` of ``t0`` in its ulps where that reads back exactly."""
    if type(at) is type(t0) and at == t0 and math.copysign(1, at) == math.copysign(1, t0):
        return 0
    if type(at) is float and type(t0) is float:
        k = (at - t0) / q
        if k.is_integer() and 0 < abs(k) < _NEAR and t0 + int(k) * q == at:
            return int(k)
    return [at]


def encode_events(
    events: Sequence[LogEvent], payload_doc: Any, records: list[bytes | None] | None = None
) -> bytes:
    """Format 2's bytes of checked events (``payload_doc(event)``: format 1's payload rule).

    ``records``, when given, gets each event's message record as written (None for an event
    without one): a writer that keeps them (the recorder's history segments) never encodes
    a message twice."""
    first = events[0]
    t0 = first.occurred_at
    q = math.ulp(t0)
    packed: list[str] = []
    head: list[Any] = [FORMAT]
    run0, turn0 = first.run_id, first.turn_id
    for value in (run0, turn0):
        raw = None if value is None else _packed(value)
        if raw is None:
            head.append(value)
        else:
            head.append(0)
            packed.append(raw)
    head += [t0, ""]
    for e in events:
        code = _CODE.get(e.type)
        raw = _packed(e.event_id)
        if raw is not None:
            packed.append(raw)
        doc: list[Any] = [e.type if code is None else code, e.event_id if raw is None else 0]
        doc.append(_at(e.occurred_at, t0, q))
        extra: dict[str, Any] = {}
        if e.required is not (True if code is None else _REQUIRED[code]):
            extra["r"] = e.required
        if e.run_id != run0:
            extra["run"] = e.run_id
        if e.turn_id != turn0:
            extra["turn"] = e.turn_id
        payload = e.payload
        record = _record(payload.get("m")) if payload else None
        if records is not None:
            records.append(record)
        if record is not None:
            doc.append(orjson.Fragment(record))
            if len(payload) > 1:
                extra["p"] = payload_doc(e, {k: v for k, v in payload.items() if k != "m"})
        elif payload or extra:
            doc.append(payload_doc(e, payload) if payload else {})
        if extra:
            doc.append(extra)
        head.append(doc)
    head[4] = "".join(packed)
    try:
        return orjson.dumps(head)
    except TypeError as exc:
        raise InvalidState(f"a log batch is not JSON data: {exc}") from None


def _record(value: Any) -> bytes | None:
    """A message's format-2 record (a JSON array), or None: format 1's dict is written."""
    if type(value) is not Msg:
        return None
    try:
        record = encode_msg(value)
    except InvalidState:  # over the record limit, ...: the format-1 document, as before
        return None
    return record if record[:1] == b"[" else None


Row = tuple[int, str, str, float, dict[str, Any], bool, "str | None", "str | None"]
"""One committed event as a tuple: (seq, event_id, type, occurred_at, payload, required,
run_id, turn_id). What a cold projection applies: the envelope checked exactly as for a
``LogEvent``, without building one (``batch.decode_rows``)."""


def _bad(where: str, seq: int, what: str) -> LogCorrupt:
    return LogCorrupt(f"{where}: the event or commit at seq {seq} {what}")


def decode_events(
    docs: list[Any], first_seq: int, where: str, marks: list[int] | None
) -> list[Row]:
    """Rows of a parsed format-2 batch; ``marks`` gets the indexes of the rows whose "m" is
    a format-2 message record (``decode_batch`` turns them into ``message_doc``)."""

    if len(docs) < 6:
        raise _bad(where, first_seq, "is not a format-2 batch")
    run0, turn0, t0, hexes = docs[1], docs[2], docs[3], docs[4]
    if type(t0) not in _NUMBERS or type(hexes) is not str:
        raise _bad(where, first_seq, "has a bad header")
    pos = 0
    if run0 == 0 and type(run0) is int:
        run0, pos = hexes[0:32], 32
    if turn0 == 0 and type(turn0) is int:
        turn0, pos = hexes[pos : pos + 32], pos + 32
    if (
        (run0 is not None and type(run0) is not str)
        or (turn0 is not None and type(turn0) is not str)
        or len(hexes) < pos
    ):
        raise _bad(where, first_seq, "has a bad header")
    q = math.ulp(t0)
    out: list[Row] = []
    append = out.append
    seq = first_seq
    info = _INFO
    for doc in docs[5:]:
        if type(doc) is not list:
            raise _bad(where, seq, "is not an event")
        n = len(doc)
        if n == 4:
            kind, eid, at, payload = doc
        elif n == 3:
            kind, eid, at = doc
            payload = {}
        elif n == 5:
            kind, eid, at, payload, x = doc
        else:
            raise _bad(where, seq, "is not an event")
        if type(kind) is int:
            got = info.get(kind)
            if got is None:
                raise _bad(where, seq, f"has an unknown type code {kind!r}")
            kind, required = got
        elif type(kind) is str:
            required = True
        else:
            raise _bad(where, seq, "has a bad type")
        if eid == 0 and type(eid) is int:
            eid = hexes[pos : pos + 32]
            pos += 32
        elif type(eid) is not str or not eid or (len(eid) == 32 and _HEX.issuperset(eid)):
            raise _bad(where, seq, "has a bad event id")  # a 32-hex id is always packed
        if type(at) is int:
            if at:
                if not -_SPAN < at < _SPAN or not math.isfinite(at := t0 + at * q):
                    raise _bad(where, seq, "has a bad time")
            else:
                at = t0
        elif type(at) is list and len(at) == 1 and type(at[0]) in _NUMBERS:
            at = at[0]
        else:
            raise _bad(where, seq, "has a bad time")
        if type(payload) is list:
            if marks is not None:
                marks.append(len(out))
            payload = {"m": payload}
            listed = True
        elif type(payload) is dict:
            listed = False
        else:
            raise _bad(where, seq, "has a bad payload")
        if n == 5:
            run, turn, required, payload = _extras(x, run0, turn0, required, payload, listed)
            if run is _BAD:
                raise _bad(where, seq, "has bad extras")
            append((seq, eid, kind, at, payload, required, run, turn))
        else:
            append((seq, eid, kind, at, payload, required, run0, turn0))
        seq += 1
    if pos != len(hexes):
        raise _bad(where, first_seq, "has ids its events do not use (or too few)")
    return out


def _extras(x: Any, run: Any, turn: Any, required: bool, payload: Any, listed: bool) -> Any:
    """An event's extras applied: (run, turn, required, payload), run ``_BAD`` if wrong."""
    if type(x) is not dict or not x.keys() <= _EXTRA:
        return _BAD, None, False, None
    required = x.get("r", required)
    run, turn = x.get("run", run), x.get("turn", turn)
    if "p" in x:
        rest = x["p"]
        if type(rest) is not dict or "m" in rest or not listed:
            return _BAD, None, False, None
        payload = {**rest, **payload}
    if (
        type(required) is not bool
        or (run is not None and type(run) is not str)
        or (turn is not None and type(turn) is not str)
    ):
        return _BAD, None, False, None
    return run, turn, required, payload
