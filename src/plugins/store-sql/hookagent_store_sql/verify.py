"""What the store trusts of a slot's stored rows, on a load and inside a save's transaction.

Why: the rows can be changed behind the store's back (a reporting tool, a hand repair, a
restore gone wrong). Whatever does not decode or does not add up is ``CorruptState`` naming
the slot, on a load and on a save, so a save never overwrites the evidence. Checked here:
the counters' ranges (``version`` 1 .. 2**63-2, so the next save's +1 fits a BIGINT;
``generation`` 0 .. 2**63-2, bumped by rewrites; ``message_count`` 0 .. 2**31-1), message
rows exactly ``seq`` 0 .. count-1 (no gap, none past the count), every body and the head
decoding, and the head naming its own slot. A head written by a newer schema stays
``UnsupportedSchemaVersion``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import pairwise
from operator import itemgetter
from typing import Any

import orjson
from hookagent.codec import decode_head, decode_msgs
from hookagent.errors import (
    CorruptState,
    InvalidMessage,
    InvalidState,
    StateTooLarge,
    UnsupportedSchemaVersion,
)
from hookagent.history import History
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.ids import check_loaded_slot, check_schema_writable, slot_name

Slot = tuple[str, str, str]
"""(user_id, session_id, key)."""

MAX_COUNTER = 2**63 - 2  # version and generation: the next save's +1 still fits a BIGINT
MAX_COUNT = 2**31 - 1  # message_count is an INT


def _in_range(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def count_ok(count: object) -> bool:
    return _in_range(count, 0, MAX_COUNT)


def check_counters(version: object, generation: object, count: object, slot: Slot) -> None:
    """The head row's counters are in range, or ``CorruptState`` naming the slot."""
    for what, value, low, high in (
        ("version", version, 1, MAX_COUNTER),
        ("generation", generation, 0, MAX_COUNTER),
        ("message_count", count, 0, MAX_COUNT),
    ):
        if not _in_range(value, low, high):
            raise CorruptState(
                f"{slot_name(*slot)}: stored {what} {value!r} is out of range ({low} .. {high})"
            )


def named(exc: Exception, slot: Slot) -> InvalidState:
    """A decoding error of stored data, as the error to raise: it names the slot; what is
    neither too large nor a newer schema is ``CorruptState`` (stored data that does not fit)."""
    keep = (CorruptState, StateTooLarge, UnsupportedSchemaVersion)
    cls = type(exc) if isinstance(exc, keep) else CorruptState
    return cls(f"{slot_name(*slot)}: {exc}")


def name_error(exc: Exception, slot: Slot) -> None:
    """Make ``exc``'s message name the slot (every load and save error does)."""
    name = slot_name(*slot)
    if name not in str(exc):
        exc.args = (f"{name}: {exc}", *exc.args[1:])


def decode_tail(rows: Sequence[Any], start: int, count: int, slot: Slot) -> list[Msg]:
    """Decode the message rows and chunks (``rows[1:]``; ``rows[0]`` is the head): a
    message row is (seq, _, _, None, body), a chunk (end_seq, _, _, n, body).

    They normally come in order, exactly ``start .. count-1``; another order is sorted; a
    gap, an overlap or anything past the count is ``CorruptState`` (the count disagrees).
    """
    tail = rows[1:]
    if any(r[3] is not None for r in tail):
        seqs = [r[0] for r in tail if r[3] is None]
        bodies = [r[4] for r in tail if r[3] is None]
        chunks = [(r[0], r[3], r[4]) for r in tail if r[3] is not None]
        return decode_mixed(seqs, bodies, chunks, start, count, slot)
    return decode_columns([r[0] for r in tail], [r[4] for r in tail], start, count, slot)


def split_chunk(end: Any, n: Any, body: Any, slot: Slot) -> list[str]:
    """A chunk's records: exactly ``n`` of them, or ``CorruptState``."""
    if type(end) is not int or type(n) is not int or n < 1 or end - n < 0 or type(body) is not str:
        raise CorruptState(f"{slot_name(*slot)}: a message chunk ending at {end!r} is malformed")
    records = body.split("\n")
    if len(records) != n:
        raise CorruptState(
            f"{slot_name(*slot)}: the message chunk ending at {end} says {n} messages but "
            f"holds {len(records)} records"
        )
    return records


def split_chunks(
    ends: Sequence[Any], ns: Sequence[Any], chunks: Sequence[Any], slot: Slot
) -> tuple[Sequence[Any], Sequence[Any], list[int], list[str]]:
    """The chunks' records, split here: (ends, ns, records found per chunk, all the records
    chunk by chunk), as ``decode_split`` takes them; ``CorruptState`` for a malformed chunk."""
    if not (len(ends) == len(ns) == len(chunks)):
        raise CorruptState(f"{slot_name(*slot)}: the load's chunk columns disagree")
    ks: list[int] = []
    recs: list[str] = []
    for body in chunks:
        if type(body) is not str:
            raise CorruptState(f"{slot_name(*slot)}: a message chunk's body is malformed")
        records = body.split("\n")
        ks.append(len(records))
        recs += records
    return ends, ns, ks, recs


def decode_split(
    seqs: Sequence[Any],
    bodies: Sequence[Any],
    split: tuple[Sequence[Any], Sequence[Any], Sequence[Any], Sequence[Any]],
    count: int,
    slot: Slot,
) -> list[Msg]:
    """A whole slot whose chunks the server split (PostgreSQL's cold load): message rows
    ``0 .. m-1`` (any order), then per chunk its end_seq, n and the records found, and all
    the records, chunk by chunk in the scan's order (which need not be end_seq's: a
    rewrite's or a create's new row may sit anywhere in the table). Same rules as
    ``decode_mixed``: the chunks tile ``m .. count-1``, each holding exactly ``n`` records,
    else ``CorruptState``."""
    ends, ns, ks, recs = split
    m = len(seqs)
    rows = decode_columns(seqs, bodies, 0, m, slot) if m else []
    pos = m
    if not (len(ends) == len(ns) == len(ks)):
        raise CorruptState(f"{slot_name(*slot)}: the load's chunk columns disagree")
    parts: list[tuple[Any, Any, Any, int]] = []
    offset = 0
    for end, n, k in zip(ends, ns, ks, strict=True):
        parts.append((end, n, k, offset))
        offset += k
    in_order = all(a[0] < b[0] for a, b in pairwise(parts))
    if not in_order:
        parts.sort(key=lambda part: part[0])
    for end, n, k, _ in parts:
        if n != k:
            raise CorruptState(
                f"{slot_name(*slot)}: the message chunk ending at {end} says {n} messages but "
                f"holds {k} records"
            )
        if end - n != pos:
            break
        pos = end
    else:
        if pos == count and offset == len(recs) == count - m:
            if not in_order:
                recs = [r for _, _, k, o in parts for r in recs[o : o + k]]
            return [*rows, *decode_bodies(recs, slot)] if rows else decode_bodies(recs, slot)
    raise CorruptState(
        f"{slot_name(*slot)} says {count} messages but its rows and chunks from seq 0 "
        f"do not hold exactly 0..{count - 1} (a gap, an overlap, or messages past them)"
    )


def decode_mixed(
    seqs: Sequence[Any],
    bodies: Sequence[Any],
    chunks: Sequence[tuple[Any, Any, Any]],
    start: int,
    count: int,
    slot: Slot,
) -> list[Msg]:
    """Message rows (``seqs[i]`` is ``bodies[i]``'s) and chunks (end_seq, n, body) that must
    tile ``start .. count-1`` exactly (a chunk may straddle ``start``: its records before
    it are dropped), decoded in one ``decode_msgs``; anything else is ``CorruptState``."""
    parts: list[tuple[int, int, Any]] = []  # (first seq, n, body or records)
    if len(seqs) != len(bodies):
        raise CorruptState(f"{slot_name(*slot)}: the load's row columns disagree")
    for seq, body in zip(seqs, bodies, strict=True):
        if type(seq) is not int:
            raise CorruptState(f"{slot_name(*slot)}: a message row's seq {seq!r} is malformed")
        parts.append((seq, 0, body))
    for end, n, body in chunks:
        records = split_chunk(end, n, body, slot)
        parts.append((end - n, n, records))
    parts.sort(key=itemgetter(0))
    items: list[Any] = []
    pos = start
    for i, (first, n, body) in enumerate(parts):
        if n == 0:  # a message row
            if first != pos:
                break
            items.append(body)
            pos += 1
            continue
        if first > pos or (first < pos and (i > 0 or first + n <= pos)):
            break
        items.extend(body[pos - first :] if first < pos else body)
        pos = first + n
    else:
        if pos == count:
            return decode_bodies(items, slot)
    raise CorruptState(
        f"{slot_name(*slot)} says {count} messages but its rows and chunks from seq {start} "
        f"do not hold exactly {start}..{count - 1} (a gap, an overlap, or messages past them)"
    )


def decode_columns(
    seqs: Sequence[Any], bodies: Sequence[Any], start: int, count: int, slot: Slot
) -> list[Msg]:
    """``decode_tail`` of the rows given as columns (``seqs[i]`` is ``bodies[i]``'s seq),
    same checks and errors: exactly ``start .. count-1``, in any order."""
    if len(seqs) != count - start or len(bodies) != len(seqs):
        raise CorruptState(
            f"{slot_name(*slot)} says {count} messages but holds {len(seqs)} rows from "
            f"seq {start} (rows {start}..{count - 1} are not all present, or rows past them are)"
        )
    if not seqs:
        return []
    want = list(range(start, count))
    if list(seqs) != want:
        pairs = sorted(zip(seqs, bodies, strict=True), key=itemgetter(0))
        if [p[0] for p in pairs] != want:
            raise CorruptState(
                f"{slot_name(*slot)} says {count} messages but rows "
                f"{start}..{count - 1} are not all present"
            )
        bodies = [p[1] for p in pairs]
    return decode_bodies(bodies, slot)


def decode_bodies(bodies: Sequence[Any], slot: Slot) -> list[Msg]:
    try:
        return decode_msgs(bodies)
    except (InvalidState, InvalidMessage) as exc:
        raise named(exc, slot) from None


def decode_slot(head: Any, log: list[Msg], length: int, slot: Slot) -> AgentState:
    """The stored head decoded around ``log[:length]``, which the history shares (no copy:
    ``log`` is the cache's append-only list); it must name its own slot."""
    try:
        state = decode_head(head, ())
    except (InvalidState, InvalidMessage) as exc:
        raise named(exc, slot) from None
    state.context = History.shared(log, length)
    return check_loaded_slot(state, *slot)


def check_writable(head: Any, messages: list[Msg], slot: Slot) -> None:
    """Inside a save: the stored slot decodes and its schema is not newer than ours."""
    try:
        decode_slot(head, messages, len(messages), slot)
    except UnsupportedSchemaVersion:
        check_schema_writable(orjson.loads(head).get("schema_version"), *slot)
        raise


def head_token(backend: str, head: str) -> str:
    """What a save's compare-and-set compares the stored head with (``queries.head_match``):
    on SQLite the head itself (in-process, a memcmp); elsewhere its MD5 (hex), so the head
    is not sent back to the server. Not a security measure: it detects a head changed behind
    the store's back since this instance decoded (or wrote) it."""
    if backend == "sqlite":
        return head
    return hashlib.md5(head.encode("utf-8"), usedforsecurity=False).hexdigest()
