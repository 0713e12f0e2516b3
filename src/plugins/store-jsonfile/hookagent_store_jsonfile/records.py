"""On-disk formats: format-1 history records and the head file. Fail closed on any doubt.

Format-1 history record (written before format 2, still read; ``frame`` also serves the fsspec
stores' segments): ``len (4 bytes, big-endian) | crc32(payload) (4 bytes) | payload`` where
the payload is one message encoded by ``hookagent.codec.encode_msg``, zlib-compressed when it
is 96 bytes or more and that makes it smaller (``pack``; the first byte tells: ``{`` for JSON,
0x78 for zlib). Local-disk format 2 writes frames instead (``frames``).

Head file: ``MAGIC | meta_len | state_len | crc32(meta + state) | meta | state`` where ``meta``
is a small JSON object (version, history generation, committed record count and byte length)
and ``state`` is ``encode_head(state)`` (every section but the history). ``MAGIC2`` marks a
format-2 head, after whose committed bytes commit frames may follow. The head is always
replaced whole (atomic rename), so a bad checksum or length is corruption, never a torn write.
``MAGIC3`` marks a first save's head, written once at the start of its record file (``head``
is a hard link to it): the file grows by appends after the head, whose bytes never change.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from hookagent.codec import MAX_MESSAGE_BYTES, MAX_STATE_BYTES, dumps, loads
from hookagent.errors import CorruptState
from hookagent.messages import Msg

from .frames import decode_messages

RECORD = struct.Struct(">II")
MAGIC = b"HAJFHD1\n"
MAGIC2 = b"HAJFHD2\n"
"""A format-2 head: commit frames (``frames``) may follow its committed ``size``."""
MAGIC3 = b"HAJFHD3\n"
"""A format-3 head: a first save's, at the start of its own record file (one inode, one fsync
for both; ``head`` is a hard link to ``h<gen>.log``). The base's batch frames follow the head
bytes, commit frames follow ``size`` as in format 2. Older code refuses it (bad magic)."""
_HEAD = struct.Struct(">III")
_META_LIMIT = 64 * 1024
_COMPRESS_MIN = 96


@attrs.frozen
class Head:
    """What a committed head says about one key of a slot."""

    version: int
    gen: str
    count: int
    size: int
    """Committed bytes of the local record file, or committed segments on fsspec."""
    state: bytes
    tail: bool = False
    """Format 2 (local disk): newer commits may follow ``size`` as commit frames."""
    start: int = 0
    """Where the record file's base starts: the head's own length in format 3, else 0."""


def pack(message: bytes) -> bytes:
    """A message's stored form: zlib when that is smaller, else its JSON as is.

    The two never look alike: encoded messages are JSON objects (first byte ``{``), a zlib
    stream with the default window starts with 0x78.
    """
    if len(message) >= _COMPRESS_MIN:
        packed = zlib.compress(message, 6)
        if len(packed) < len(message):
            return packed
    return message


def unpack(payload: bytes, where: str) -> bytes:
    """Inverse of ``pack``, bounded to ``MAX_MESSAGE_BYTES`` (no decompression bomb)."""
    if payload[:1] != b"\x78":
        return payload
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(payload, MAX_MESSAGE_BYTES + 1)
    except zlib.error as exc:
        raise CorruptState(f"{where}: a compressed message does not inflate: {exc}") from None
    if len(out) > MAX_MESSAGE_BYTES or not inflater.eof or inflater.unused_data:
        raise CorruptState(f"{where}: a compressed message is oversized or has trailing bytes")
    return out


def frame(messages: Iterable[bytes]) -> bytes:
    """Records for encoded messages (each packed, then ``len | crc32 | payload``)."""
    out = bytearray()
    for m in messages:
        p = pack(m)
        out += RECORD.pack(len(p), zlib.crc32(p))
        out += p
    return bytes(out)


def unframe(buf: bytes | memoryview, count: int | None, where: str) -> list[bytes]:
    """Split committed bytes into exactly ``count`` records (any mismatch is corruption)."""
    view = memoryview(buf)
    out: list[bytes] = []
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < RECORD.size:
            raise CorruptState(f"{where}: truncated record header at byte {pos}")
        length, crc = RECORD.unpack_from(view, pos)
        pos += RECORD.size
        if length > MAX_MESSAGE_BYTES or length > end - pos:
            raise CorruptState(
                f"{where}: record at byte {pos - RECORD.size} has bad length {length}"
            )
        payload = bytes(view[pos : pos + length])
        if zlib.crc32(payload) != crc:
            raise CorruptState(f"{where}: checksum mismatch in record at byte {pos - RECORD.size}")
        out.append(payload)
        pos += length
    if count is not None and len(out) != count:
        raise CorruptState(f"{where}: {len(out)} records where the head commits {count}")
    return out


def encode_head_file(head: Head) -> bytes:
    meta = dumps(
        {"version": head.version, "gen": head.gen, "count": head.count, "size": head.size},
        what="head metadata",
    )
    body = meta + head.state
    return (
        (MAGIC2 if head.tail else MAGIC)
        + _HEAD.pack(len(meta), len(head.state), zlib.crc32(body))
        + body
    )


def encode_first_file(version: int, gen: str, count: int, base: bytes, state: bytes) -> bytes:
    """A format-3 head followed by ``base`` (its batch frames): one file for both.

    ``size`` is an offset in that file (head bytes included), so its digits change the head's
    length: the fixed point is found on the digit count (the metadata holds only ints and a
    hex generation, formatted here as the JSON it is)."""
    if not (gen.isalnum() and gen.isascii()):
        raise ValueError(f"generation {gen!r} is not alphanumeric")
    fixed = len(MAGIC3) + _HEAD.size
    meta_fmt = '{"version":%d,"gen":"%s","count":%d,"size":%d}'
    other = len(meta_fmt % (version, gen, count, 0)) - 1  # (the size's one digit taken out)
    digits = 1
    while len(str(fixed + other + digits + len(state) + len(base))) != digits:
        digits += 1
    size = fixed + other + digits + len(state) + len(base)
    meta = (meta_fmt % (version, gen, count, size)).encode()
    body = meta + state
    return MAGIC3 + _HEAD.pack(len(meta), len(state), zlib.crc32(body)) + body + base


def head_length(prefix: bytes, size: int) -> int:
    """How many bytes of a head file of ``size`` bytes are the head: all of them, except in
    format 3 (the record file follows): its header's lengths, when ``prefix`` holds them."""
    fixed = len(MAGIC3) + _HEAD.size
    if len(prefix) < fixed or not prefix.startswith(MAGIC3):
        return size
    meta_len, state_len, _ = _HEAD.unpack_from(prefix, len(MAGIC3))
    if meta_len > _META_LIMIT or state_len > MAX_STATE_BYTES:
        return min(size, fixed)  # damaged lengths: the header alone, which decoding refuses
    length: int = fixed + meta_len + state_len
    return min(size, length)


def _int(meta: dict[str, Any], name: str, where: str) -> int:
    value = meta.get(name)
    if type(value) is not int or value < 0:
        raise CorruptState(f"{where}: head field {name!r} is {value!r}, not a count")
    return value


def decode_head_file(data: bytes, where: str) -> Head:
    fixed = len(MAGIC) + _HEAD.size
    first = data.startswith(MAGIC3)
    tail = first or data.startswith(MAGIC2)
    if len(data) < fixed or not (tail or data.startswith(MAGIC)):
        raise CorruptState(f"{where}: not a head file (bad magic or too short)")
    meta_len, state_len, crc = _HEAD.unpack_from(data, len(MAGIC))
    if (
        meta_len > _META_LIMIT
        or state_len > MAX_STATE_BYTES
        or fixed + meta_len + state_len != len(data)
    ):
        raise CorruptState(f"{where}: head lengths do not match the file size")
    body = data[fixed:]
    if zlib.crc32(body) != crc:
        raise CorruptState(f"{where}: head checksum mismatch")
    meta = loads(body[:meta_len], limit=_META_LIMIT, what=f"{where} head metadata")
    if not isinstance(meta, dict):
        raise CorruptState(f"{where}: head metadata is not an object")
    gen = meta.get("gen")
    if not isinstance(gen, str) or not gen.isalnum() or not gen.isascii() or len(gen) > 64:
        raise CorruptState(f"{where}: head generation {gen!r} is malformed")
    version = _int(meta, "version", where)
    if version < 1:
        raise CorruptState(f"{where}: head version {version} is not positive")
    count, size = _int(meta, "count", where), _int(meta, "size", where)
    start = len(data) if first else 0
    if size < start:
        raise CorruptState(f"{where}: head size {size} ends inside the head ({start} bytes)")
    return Head(version, gen, count, size, body[meta_len:], tail, start)


def decode_head_bytes(data: bytes, where: str) -> Head:
    """A head from a whole head file's bytes (of a format-3 file: its head part)."""
    return decode_head_file(data[: head_length(data, len(data))], where)


def encode_fence(epoch: int, owner: str) -> bytes:
    body = dumps({"epoch": epoch, "owner": owner}, what="fence")
    return MAGIC + _HEAD.pack(len(body), 0, zlib.crc32(body)) + body


def decode_fence(data: bytes, where: str) -> tuple[int, str | None]:
    """The newest fencing epoch recorded for a slot, and its owner (None if not recorded)."""
    fixed = len(MAGIC) + _HEAD.size
    if len(data) < fixed or not data.startswith(MAGIC):
        raise CorruptState(f"{where}: not a fence file")
    meta_len, _, crc = _HEAD.unpack_from(data, len(MAGIC))
    body = data[fixed:]
    if meta_len != len(body) or meta_len > _META_LIMIT or zlib.crc32(body) != crc:
        raise CorruptState(f"{where}: fence file is damaged")
    meta = loads(body, limit=_META_LIMIT, what=f"{where} fence")
    if not isinstance(meta, dict):
        raise CorruptState(f"{where}: fence is not an object")
    owner = meta.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise CorruptState(f"{where}: fence owner {owner!r} is not a str")
    return _int(meta, "epoch", where), owner


def decode_payloads(payloads: Sequence[bytes], where: str) -> list[Msg]:
    """Decode stored messages with the codec's rules (size, depth 64, strict structure)."""
    return decode_messages([unpack(p, where) for p in payloads], where)
