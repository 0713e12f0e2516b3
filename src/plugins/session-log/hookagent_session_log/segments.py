"""History segments: K messages' records in one event, so a cold load reads few commits.

A ``history/segment`` event holds the codec records of the messages appended in the seqs
``(from, to]`` (the bytes their own commits wrote, joined), the index of the first of them
in the history since the base, and the turns completed in that range. It is cut only at a
quiet point (no tool call open at ``to``), so those commits add nothing to the projection
but their messages and completed turns. A segment counts only once the checkpoint written
in the same commit names it: the checkpoint's ``segments`` is the chain since the base, one
``[seq, to, count]`` a segment, each starting where the previous one ended. A cold load
reads the checkpoint, the segments it names, and the commits after the last ``to``; every
message stays a ``message/appended`` fact too, so a reader that ignores segments (an older
one) rebuilds the same state from the commits. A segment that disagrees with the chain its
checkpoint names fails closed (``LogCorrupt``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from hookagent.codec import encode_msg, msgs_from_dicts
from hookagent.errors import InvalidState, LogCorrupt
from hookagent.sessionlog import LogEvent

from . import catalogue as c

if TYPE_CHECKING:
    from .projection import Projection

SEGMENT_MESSAGES = 256
"""K: the messages since the last segment that make the next one due (at a quiet point)."""
SEGMENT_BYTES = 4 * 1024 * 1024
"""The largest segment's records, in bytes (half a commit's limit); a longer stretch is
not cut (its load reads the commits, as without segments)."""
SEGMENT_VERSION = 1
"""What a segment's range may hold besides its messages and completed turns: version 1's
catalogue (dispatches and results settled in the range, run starts and ends). A writer
whose range could hold a required event this reader does not know writes a higher
version; a reader meeting a version it does not know reads the commits instead."""

Link = tuple[int, int, int]
"""One segment in a checkpoint's chain: (the segment event's seq, its ``to``, its count)."""


def chain_of(payload: Any) -> list[Link]:
    """A checkpoint's ``segments`` (none when it has no such key: an older writer's)."""
    raw = payload.get("segments")
    if raw is None:
        return []
    if type(raw) is not list:
        raise TypeError("a checkpoint's segments are a list")
    out: list[Link] = []
    for link in raw:
        if (
            type(link) is not list
            or len(link) != 3
            or any(type(v) is not int or v < 0 for v in link)
            or link[1] >= link[0]
            or link[2] < 1
            or (out and link[1] <= out[-1][1])
        ):
            raise ValueError(f"a checkpoint's segment is [seq, to, count] in order, got {link!r}")
        out.append((link[0], link[1], link[2]))
    return out


def start_of(base: int) -> int:
    """The seq a history based at ``base`` is read after (a cold load's start)."""
    return base - 1 if base > 0 else 0


def due(proj: Projection, every: int) -> bool:
    """Whether a segment may be cut now: K messages uncovered and no tool call open."""
    return (
        len(proj.messages) - proj.covered >= every
        and proj.covered != proj.uncut
        and not (proj.dispatched or proj.results or proj.suspended)
    )


def cut(proj: Projection, run_id: str | None, turn_id: str | None, fact: Any) -> LogEvent | None:
    """The segment of the messages after the chain's end, up to ``proj.seq``; None when
    it would be over ``SEGMENT_BYTES`` or a message will not encode (no segment then, and
    the stretch is marked so that later flushes do not encode it again)."""
    first, msgs = proj.covered, proj.messages
    records = proj.records
    parts: list[bytes] = []
    size = 0
    try:
        for i in range(first, len(msgs)):
            record = records.get(i)
            if record is None:  # a message this process did not write: encoded once, here
                record = encode_msg(msgs[i])
            parts.append(record)
            size += len(record) + 1
            if size > SEGMENT_BYTES:
                uncuttable(proj)
                return None
    except InvalidState:
        uncuttable(proj)
        return None
    turns = sorted(t for t, s in proj.turn_seqs.items() if s > proj.covered_to)
    payload = {
        "v": SEGMENT_VERSION,
        "from": proj.covered_to,
        "to": proj.seq,
        "first": first,
        "ms": orjson.Fragment(b"[" + b",".join(parts) + b"]"),
        "turns": turns,
    }
    e: LogEvent = fact(c.SEGMENT, payload, run_id, turn_id)
    return e


def uncuttable(proj: Projection) -> None:
    """The stretch after the chain is not cut again (``Projection.uncut``)."""
    proj.uncut = proj.covered
    proj.records.clear()


def keep_record(proj: Projection, every: int) -> bool:
    """Whether the record of the message being appended is kept for the next segment: not
    for a stretch that will not be cut, and at most two segments' worth (a stretch with no
    quiet point; ``cut`` encodes what is missing)."""
    return proj.covered != proj.uncut and len(proj.records) < 2 * every


def later(e: LogEvent) -> bool:
    """Whether ``e`` is a segment of a later version than this reader's (its range may hold
    events this reader would have to see: the load reads the commits instead)."""
    v = e.payload.get("v")
    return e.type == c.SEGMENT and type(v) is int and v > SEGMENT_VERSION


def apply_segment(proj: Projection, e: LogEvent | None, link: Link) -> None:
    """A segment a cold load read, checked against its link and the chain so far, applied:
    its messages appended, its turns completed."""
    where = f"user_id={proj.user_id!r} session_id={proj.session_id!r}: segment {link[0]}"
    if e is None or e.seq != link[0] or e.type != c.SEGMENT:
        raise LogCorrupt(f"{where}, named by the checkpoint, is not in the log")
    p = e.payload
    docs, turns = p.get("ms"), p.get("turns")
    if (
        p.get("v") != SEGMENT_VERSION
        or any(type(p.get(k)) is not int for k in ("from", "to", "first"))
        or p.get("from") != proj.covered_to
        or link[1] <= proj.covered_to
        or p.get("to") != link[1]
        or p.get("first") != len(proj.messages)
        or type(docs) is not list
        or len(docs) != link[2]
        or type(turns) is not list
        or any(type(t) is not str for t in turns)
    ):
        raise LogCorrupt(f"{where} does not hold what its checkpoint says it covers")
    try:
        msgs = msgs_from_dicts(docs)
    except (InvalidState, TypeError, ValueError, KeyError, IndexError) as exc:
        raise LogCorrupt(f"{where} holds a message that does not decode: {exc}") from None
    proj.messages += msgs
    for t in turns:
        proj.completed_turns.add(t)
        proj.turn_seqs[t] = link[1]
    proj.covered, proj.covered_to = len(proj.messages), link[1]
    proj.segments.append(link)
