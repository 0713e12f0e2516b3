"""Record-file format 2: frames, so that an append is one write and one fsync.

A frame is ``header | body``. The 32-byte header is ``b"HAJF" | body_len | raw_len |
crc32(body) | version (8 bytes) | count | crc32(the 28 bytes before)``, all big-endian. The
body is the frame's parts joined by ``\\n`` (the kernel codec's JSON never holds a raw
newline), zlib-compressed when that is smaller (``body_len < raw_len`` tells). A frame with
``version == 0`` is a *batch*: ``count`` messages. A frame with ``version > 0`` is a *commit*:
its first part is the state head (``encode_head``), the other parts are messages, and
``count`` is the slot's message total after it.

Frames from a head's committed ``size`` on are the commits made after that head was written
(format-2 heads only). A writer appends all of a save's frames in one write at the end of the
last complete commit and fsyncs: the commit record is the commit point. Only the last frame of
a file can be torn (a killed writer); the next writer truncates it. So an incomplete frame at
the end is an uncommitted tail, while a complete frame with a bad header or body checksum is
corruption (fail closed). Compression is per frame (one inflate per save), not per message.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import attrs
from hookagent.codec import MAX_MESSAGE_BYTES, MAX_STATE_BYTES, decode_msgs
from hookagent.errors import CorruptState, InvalidState, UnsupportedSchemaVersion
from hookagent.messages import Msg

FRAME_MAGIC = b"HAJF"
_FIXED = struct.Struct(">4sIIIQI")
_CRC = struct.Struct(">I")
FRAME_HEADER = _FIXED.size + _CRC.size
BATCH_TARGET = 1 << 20
"""A save's messages go into frames of about this many raw bytes (bounds a frame's inflate)."""
FRAME_RAW_MAX = MAX_STATE_BYTES + BATCH_TARGET + MAX_MESSAGE_BYTES + 64
_COMPRESS_MIN = 96


def encode_frame(parts: Sequence[bytes], version: int, count: int) -> bytes:
    if any(b"\n" in p for p in parts):
        raise InvalidState("an encoded part holds a raw newline; it cannot be framed")
    raw = b"\n".join(parts)
    body = raw
    if len(raw) >= _COMPRESS_MIN:
        packed = zlib.compress(raw, 6)
        if len(packed) < len(raw):
            body = packed
    fixed = _FIXED.pack(FRAME_MAGIC, len(body), len(raw), zlib.crc32(body), version, count)
    return fixed + _CRC.pack(zlib.crc32(fixed)) + body


def batches(messages: Sequence[bytes]) -> list[list[bytes]]:
    """Messages cut into groups of about ``BATCH_TARGET`` raw bytes (at least one each)."""
    out: list[list[bytes]] = []
    cur: list[bytes] = []
    size = 0
    for m in messages:
        if cur and size + len(m) > BATCH_TARGET:
            out.append(cur)
            cur, size = [], 0
        cur.append(m)
        size += len(m) + 1
    if cur:
        out.append(cur)
    return out


def encode_batches(messages: Sequence[bytes]) -> bytes:
    """Batch frames holding ``messages`` (a rewrite's committed prefix)."""
    return b"".join(encode_frame(b, 0, len(b)) for b in batches(messages))


def encode_commit(messages: Sequence[bytes], state: bytes, version: int, count: int) -> bytes:
    """A save's frames: batches for all but the last group, then the commit frame."""
    groups = batches(messages) or [[]]
    head = b"".join(encode_frame(b, 0, len(b)) for b in groups[:-1])
    return head + encode_frame([state, *groups[-1]], version, count)


@attrs.frozen
class Frame:
    end: int
    version: int
    count: int
    parts: list[bytes]


def read_frame(buf: memoryview, pos: int, where: str) -> Frame | None:
    """The frame at ``pos``, or None when the buffer ends inside it (a torn write)."""
    left = len(buf) - pos
    if left < FRAME_HEADER:
        if bytes(buf[pos : pos + min(left, 4)]) != FRAME_MAGIC[: min(left, 4)]:
            raise CorruptState(f"{where}: garbage at byte {pos} of the history file")
        return None
    fixed = bytes(buf[pos : pos + _FIXED.size])
    magic, body_len, raw_len, body_crc, version, count = _FIXED.unpack(fixed)
    if magic != FRAME_MAGIC or _CRC.unpack_from(buf, pos + _FIXED.size)[0] != zlib.crc32(fixed):
        raise CorruptState(f"{where}: damaged frame header at byte {pos} of the history file")
    if raw_len > FRAME_RAW_MAX or body_len > raw_len:
        raise CorruptState(f"{where}: frame at byte {pos} has bad lengths")
    start = pos + FRAME_HEADER
    if body_len > len(buf) - start:
        return None
    body = buf[start : start + body_len]
    if zlib.crc32(body) != body_crc:
        raise CorruptState(f"{where}: checksum mismatch in the frame at byte {pos}")
    raw = bytes(body) if body_len == raw_len else _inflate(body, raw_len, pos, where)
    parts = raw.split(b"\n")
    n = len(parts) - 1 if version else len(parts)
    if (not version and n != count) or not all(parts):
        raise CorruptState(f"{where}: frame at byte {pos} does not hold what it says")
    return Frame(start + body_len, version, count, parts)


def _inflate(body: memoryview, raw_len: int, pos: int, where: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(body, raw_len + 1)  # bounded: no decompression bomb
    except zlib.error as exc:
        raise CorruptState(f"{where}: the frame at byte {pos} does not inflate: {exc}") from None
    if len(out) != raw_len or not inflater.eof or inflater.unused_data:
        raise CorruptState(f"{where}: the frame at byte {pos} inflates to the wrong length")
    return out


def decode_messages(payloads: Sequence[bytes], where: str) -> list[Msg]:
    """Stored JSON messages to ``Msg`` with the codec's strict rules; one parse per batch."""
    try:
        return decode_msgs(payloads)
    except UnsupportedSchemaVersion:
        raise
    except InvalidState as exc:
        raise CorruptState(f"{where}: a stored message does not decode: {exc}") from exc
