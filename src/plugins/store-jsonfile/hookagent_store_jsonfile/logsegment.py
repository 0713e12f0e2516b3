"""Format 2 of the local session log: the commits appended to the head file, one sync each.

A session written in format 2 (every session created since; a format-1 session, with one
``c<first seq>`` file per commit, is read and written in format 1 as before) keeps its
commits in its ``head`` file, after the two 4 KiB head slots::

    head    [slot 0][slot 1][record][record]...     a record: a commit file's bytes (magic,
                                                    lengths, crc32, header, batch)

A head slot in format 2 also holds ``end`` (the byte offset after the last committed record)
and ``lo`` (where that record starts). A commit, under the session's exclusive flock: read
the head, plan, ``pwrite`` the record at ``end``, ``pwrite`` the new head into the other slot
(``end`` moved past the record), **one fdatasync**: the commit point. The batch index and
the sealed owners of finished runs are in the records (``b``, ``s`` in a record's header),
indexed in memory per handle by scanning the records up to ``end``, only the new ones
after the first scan.

Why one sync is enough (the crash argument):

* A process killed anywhere leaves its writes in the page cache, in program order: killed
  after the record and before the slot, the record is past the head's ``end`` (an orphan:
  never read, never indexed, overwritten by the next commit); after the slot, the commit is
  complete.
* A power loss during the fdatasync may keep any subset of its pages: a torn slot fails its
  checksum and the other slot (the previous head) is the head; a slot that landed while its
  record did not names a record that fails its crc. A handle's first read of a session
  checks the record the head names; if it is torn and the other slot is the head right
  before it (its ``end`` is that record's start), that previous head is the head: the lost
  commit's fdatasync never returned, so it was never acknowledged. Anything else is
  ``LogCorrupt`` (fail closed). A later read needs no check: a power loss ends this handle
  too.
* Lease changes are not synced at all (``loglocal``'s "Leases are not synced").
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
from hookagent.errors import LogCorrupt

from . import logindex
from . import posixio as io
from .logfiles import COMMIT_MAGIC, SLOT, decode_commit_file, flat_json
from .logtree import Session

FORMAT = 2
START = 2 * SLOT
"""Where the first record of a format-2 session starts (after the two head slots)."""
_FIXED = struct.Struct(">III")
_MAGIC = len(COMMIT_MAGIC)
_PREFIX = _MAGIC + _FIXED.size
Doc = dict[str, Any]


def is_v2(doc: Doc | None) -> bool:
    return doc is not None and doc.get("fmt") == FORMAT


def fresh_fields() -> Doc:
    """The format-2 fields of a session's first head (no record yet)."""
    return {"fmt": FORMAT, "end": START, "lo": 0}


def encode_record(
    first: int, last: int, batch_id: str, digest: str, data: bytes, seal: str | None
) -> bytes:
    """A record: the commit file's framing, its header naming a sealed owner if any."""
    meta: Doc = {"f": first, "l": last, "b": batch_id, "d": digest}
    if seal is not None:
        meta["s"] = seal
    head = flat_json(meta)
    body = head + data
    return COMMIT_MAGIC + _FIXED.pack(len(head), len(data), zlib.crc32(body)) + body


@attrs.define
class Index:
    """What this handle knows of a format-2 session's records, up to ``end``."""

    life: str
    end: int = START
    starts: list[int] = attrs.Factory(list)
    offsets: list[int] = attrs.Factory(list)
    lasts: list[int] = attrs.Factory(list)
    batches: dict[str, tuple[int, int, str, int]] = attrs.Factory(dict)
    """batch_id -> (first, last, digest, offset) of the newest record holding it."""
    sealed: set[str] = attrs.Factory(set)
    cached: int = 0
    """How many of these records the cache file (``logindex``) holds, as this handle last
    read or wrote it."""


def index(ses: Session, doc: Doc, where: str) -> Index:
    """The session's index, brought to the head's ``end`` (reading only records it lacks).
    A record under ``end`` that is cut short or has a bad header is ``LogCorrupt``."""
    return _extend(ses, doc, where)[0]


def _extend(ses: Session, doc: Doc, where: str) -> tuple[Index, int, bytes | None]:
    """``index``, and the bytes it read to extend it (from byte ``base``; None: nothing
    new), which a read that follows uses instead of reading them again."""
    end = int(doc["end"])
    idx: Index | None = ses.seg
    if idx is None or idx.life != doc["life"] or idx.end > end:
        # new incarnation, or a head that went back: from the cache if it agrees, else rescan
        idx = _cached(ses, doc, end, where) or Index(str(doc["life"]))
    base, buf = idx.end, None
    if base < end:
        buf = io.pread_exact(ses.hd, end - base, base)
        if len(buf) != end - base:
            raise LogCorrupt(f"{where}: the log file is cut short (its head ends at {end})")
        starts, offsets, lasts = idx.starts, idx.offsets, idx.lasts
        batches, sealed = idx.batches, idx.sealed
        prev = starts[-1] if starts else 0
        at, size_of = 0, len(buf)
        while at < size_of:
            off = base + at
            size, meta = _header(buf, at, where, off)
            first, last = meta["f"], meta["l"]
            if first <= prev:
                raise LogCorrupt(f"{where}: the record at byte {off} goes back to seq {first}")
            starts.append(first)
            offsets.append(off)
            lasts.append(last)
            batches[meta["b"]] = (first, last, meta["d"], off)
            seal = meta.get("s")
            if type(seal) is str:
                sealed.add(seal)
            prev = first
            at += size
        idx.end = end
        _keep(ses, idx)
    ses.seg = idx
    return idx, base, buf


def _cached(ses: Session, doc: Doc, end: int, where: str) -> Index | None:
    """The index the cache file holds, if it passes ``logindex``'s checks against this
    head and its last record is where it says, with its seqs; else None (scan them all)."""
    raw = logindex.read(ses.sd)
    got = None if raw is None else logindex.decode(raw, str(doc["life"]), START, end)
    if got is None:
        return None
    starts, offsets, lasts = got["starts"], got["offsets"], got["lasts"]
    if starts:
        off, stop = offsets[-1], got["end"]
        buf = io.pread_exact(ses.hd, stop - off, off)
        try:
            size, meta = _header(buf, 0, where, off)
        except LogCorrupt:
            return None
        if size != stop - off or meta["f"] != starts[-1] or meta["l"] != lasts[-1]:
            return None
    return Index(
        str(doc["life"]), got["end"], starts, offsets, lasts, got["batches"], got["sealed"],
        cached=len(starts),
    )  # fmt: skip


def _keep(ses: Session, idx: Index) -> None:
    """Write the cache file when this handle has indexed ``EVERY`` records past it."""
    if len(idx.starts) - idx.cached >= logindex.EVERY and logindex.write(ses.sd, idx):
        idx.cached = len(idx.starts)


def _header(buf: bytes, at: int, where: str, off: int) -> tuple[int, Doc]:
    """(record size, header) of the record at ``buf[at:]``; the crc is checked on read."""
    if not buf.startswith(COMMIT_MAGIC, at) or len(buf) - at < _PREFIX:
        raise LogCorrupt(f"{where}: the record at byte {off} is not a commit")
    meta_len, data_len, _ = _FIXED.unpack_from(buf, at + _MAGIC)
    size = _PREFIX + meta_len + data_len
    if at + size > len(buf):
        raise LogCorrupt(f"{where}: the record at byte {off} runs past the head's end")
    try:  # a flat object of four or five scalars: no depth walk needed (orjson caps nesting)
        meta = orjson.loads(memoryview(buf)[at + _PREFIX : at + _PREFIX + meta_len])
    except orjson.JSONDecodeError:
        meta = None
    if type(meta) is not dict:
        raise LogCorrupt(f"{where}: the record at byte {off} has a malformed header")
    first, last = meta.get("f"), meta.get("l")
    if (
        type(first) is not int
        or type(last) is not int
        or first < 1
        or last < first
        or type(meta.get("b")) is not str
        or type(meta.get("d")) is not str
    ):
        raise LogCorrupt(f"{where}: the record at byte {off} has a malformed header")
    return size, meta


def record_at(ses: Session, off: int, end: int, where: str) -> tuple[Doc, bytes]:
    """(header, batch bytes) of the whole record at ``off`` (crc checked)."""
    raw = io.pread_exact(ses.hd, end - off, off)
    return decode_commit_file(raw, where, f"record at byte {off}")


def last_is_whole(ses: Session, doc: Doc, where: str) -> bool:
    """Whether the record the head names last (``lo`` .. ``end``) is whole."""
    lo, end = int(doc["lo"]), int(doc["end"])
    if not lo:
        return True
    try:
        record_at(ses, lo, end, where)
    except LogCorrupt:
        return False
    return True


def commits(
    ses: Session, doc: Doc, seq: int, where: str, chunk: int = 256
) -> Iterator[tuple[int, int, bytes]]:
    """(first, last, batch bytes) of the committed records from the one holding ``seq + 1``
    to the head's ``end``, each crc-checked, read ``chunk`` records per pread (or, for the
    records the index has just read, from those same bytes: a cold read reads once)."""
    idx, base, fresh = _extend(ses, doc, where)
    i = max(0, bisect.bisect_right(idx.starts, seq + 1) - 1)
    bounds = [*idx.offsets[i:], idx.end]
    if fresh is not None and bounds[0] >= base:
        yield from _checked(idx, i, bounds, fresh, base, where)
        return
    for a in range(0, len(bounds) - 1, chunk):
        part = bounds[a : a + chunk + 1]
        begin = part[0]
        buf = io.pread_exact(ses.hd, part[-1] - begin, begin)
        if len(buf) != part[-1] - begin:
            raise LogCorrupt(f"{where}: the log file is cut short (its head ends at {idx.end})")
        yield from _checked(idx, i + a, part, buf, begin, where)


def _checked(
    idx: Index, i: int, part: list[int], buf: bytes, begin: int, where: str
) -> Iterator[tuple[int, int, bytes]]:
    """The records ``i``.. bounded by ``part`` (file offsets) in ``buf`` (read from byte
    ``begin``), crc-checked. Their headers were read into the index from these very bytes
    (nothing under the head's end is ever rewritten in one incarnation): the crc of the
    whole is what is checked here."""
    view, unpack, crc32 = memoryview(buf), _FIXED.unpack_from, zlib.crc32
    starts, lasts = idx.starts, idx.lasts
    for k in range(len(part) - 1):
        at, stop = part[k] - begin, part[k + 1] - begin
        meta_len, data_len, crc = unpack(buf, at + _MAGIC)
        body = view[at + _PREFIX : stop]
        if _PREFIX + meta_len + data_len != stop - at or crc32(body) != crc:
            raise LogCorrupt(f"{where}: the record at byte {part[k]} is damaged (crc)")
        yield starts[i + k], lasts[i + k], bytes(body[meta_len:])


def record_end(idx: Index, off: int) -> int:
    """Where the indexed record at ``off`` ends."""
    k = bisect.bisect_right(idx.offsets, off)
    return idx.offsets[k] if k < len(idx.offsets) else idx.end


def append(ses: Session, doc: Doc, record: bytes) -> Doc:
    """Write ``record`` at the head's ``end`` (over an orphan, if one is there); the
    format-2 fields of the head that commits it."""
    end = int(doc["end"])
    io.write_all(ses.hd, record, end)
    return {"fmt": FORMAT, "end": end + len(record), "lo": end}


def note(ses: Session, idx: Index, first: int, last: int, batch_id: str, digest: str,
         seal: str | None, off: int, end: int) -> None:  # fmt: skip
    """Add a record this handle just committed to its index."""
    idx.starts.append(first)
    idx.offsets.append(off)
    idx.lasts.append(last)
    idx.batches[batch_id] = (first, last, digest, off)
    if seal is not None:
        idx.sealed.add(seal)
    idx.end = end
    _keep(ses, idx)
    ses.seg = idx
