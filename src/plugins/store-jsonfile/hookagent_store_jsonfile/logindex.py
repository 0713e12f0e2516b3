"""A cache of a format-2 session's record index, in the file ``index`` beside its head.

Why: a handle's first read, acquire or commit of a session indexes its records
(``logsegment.Index``: where each starts, its seqs, its batch id and digest, the sealed
owners), and without a cache that means reading every record's header: at the bench's
1,000-call session 4,020 records in 3.2 MB, 13-17 ms, paid by every cold load of every
process. With it, a cold handle reads the cache and scans only the records after it.

Only a cache. It is written without a sync (a temp file renamed over ``index``), by any
handle that has indexed ``EVERY`` records more than the cache it found holds, and it is used
only when it is whole (magic, length, crc32) and agrees with the head it is read beside:
the same incarnation (``life``), an end not past the head's, as many starts as offsets and
seqs, starts that only grow, offsets inside the records, and the record at its last offset
starting with the seqs it names (the records after its end are scanned with every check,
as always). Anything else, or a cache that cannot be read or written, and the handle scans
every record as it would without one: nothing stored depends on it. A power loss may leave
it stale or torn (it then fails a check, or holds fewer records than the head: the rest are
scanned); it is never ahead of a durable head, since a handle sees a head only after the
commit's fdatasync (the writer holds the exclusive lock until then).
"""

from __future__ import annotations

import os
import struct
import zlib
from itertools import islice
from operator import le, lt
from typing import Any

import orjson

from . import posixio as io

NAME = "index"
MAGIC = b"HALOGI1\n"
_SIZES = struct.Struct(">II")  # crc32 of the body, its length
EVERY = 256
"""Records a handle indexes past what the cache holds before it writes a new one."""
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def encode(idx: Any) -> bytes:
    """The cache's bytes for ``idx`` (a ``logsegment.Index``)."""
    bids = list(idx.batches)
    rows = [idx.batches[b] for b in bids]
    body = orjson.dumps(
        [
            idx.life,
            idx.end,
            idx.starts,
            idx.offsets,
            idx.lasts,
            bids,
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            [r[3] for r in rows],
            sorted(idx.sealed),
        ]
    )
    return MAGIC + _SIZES.pack(zlib.crc32(body), len(body)) + body


def decode(raw: bytes, life: str, start: int, end: int) -> dict[str, Any] | None:
    """The index fields the cache ``raw`` holds, or None unless it passes every check
    against the head (``life``, records from ``start`` to ``end``)."""
    head = len(MAGIC) + _SIZES.size
    if len(raw) < head or not raw.startswith(MAGIC):
        return None
    crc, size = _SIZES.unpack_from(raw, len(MAGIC))
    body = memoryview(raw)[head:]
    if len(body) != size or zlib.crc32(body) != crc:
        return None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(doc) is not list or len(doc) != 11:
        return None
    c_life, c_end, starts, offsets, lasts, bids, bf, bl, bd, bo, sealed = doc
    lists = (starts, offsets, lasts, bids, bf, bl, bd, bo, sealed)
    if c_life != life or type(c_end) is not int or not start <= c_end <= end:
        return None
    if any(type(x) is not list for x in lists):
        return None
    n, m = len(starts), len(bids)
    if len(offsets) != n or len(lasts) != n or not (len(bf) == len(bl) == len(bd) == len(bo) == m):
        return None
    if not _all_of(int, starts, offsets, lasts, bf, bl, bo) or not _all_of(str, bids, bd, sealed):
        return None
    if n and (
        starts[0] < 1
        or not all(map(lt, starts, islice(starts, 1, None)))
        or not all(map(lt, offsets, islice(offsets, 1, None)))
        or offsets[0] != start
        or offsets[-1] >= c_end
        or not all(map(le, starts, lasts))
    ):
        return None
    if not n and c_end != start:
        return None
    batches = dict(zip(bids, zip(bf, bl, bd, bo, strict=True), strict=True))
    return {"end": c_end, "starts": starts, "offsets": offsets, "lasts": lasts,
            "batches": batches, "sealed": set(sealed)}  # fmt: skip


def _all_of(kind: type, *parts: list[Any]) -> bool:
    """Whether every item of every list is exactly a ``kind`` (4,000 records: the loops
    stay in C, as do the order checks' ``map``)."""
    return all(set(map(type, part)) <= {kind} for part in parts)


def read(dir_fd: int) -> bytes | None:
    """The cache's bytes, or None if there is none (or it cannot be read)."""
    try:
        fd = os.open(NAME, _READ, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return _read_all(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    at = 0
    while True:
        part = os.pread(fd, 1 << 20, at)
        if not part:
            return b"".join(parts)
        parts.append(part)
        at += len(part)


def write(dir_fd: int, idx: Any) -> bool:
    """Replace the cache with ``idx``'s (no sync: a cache); False if that failed (the
    temp file removed, the old cache left as it was)."""
    data = encode(idx)
    tmp = io.tmp_name()
    try:
        fd = os.open(tmp, io.NEW_FLAGS, 0o600, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        try:
            io.write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, NAME, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        io.unlink_quiet(dir_fd, tmp)
        return False
    return True
