"""Record-file format 2: frames, so that an append is one write and one fsync.

A frame is ``header | body``. The 32-byte header is ``b"HAJD" | body_len | raw_len |
crc32(body) | version (8 bytes) | count | crc32(the 28 bytes before)``, all big-endian. The
body is the frame's parts joined by ``\\n`` (the kernel codec's JSON never holds a raw
newline), compressed (raw deflate) when that is smaller (``body_len < raw_len`` tells; frames
with the magic ``HAJF`` hold zlib streams instead). A frame with
``version == 0`` is a *batch*: ``count`` messages. A frame with ``version > 0`` is a *commit*:
its first part is the state head (``encode_head``), or empty when the state head is the same
as at the commit before; the other parts are messages; ``count`` is the slot's message total
after it.

Frames from a head's committed ``size`` on are the commits made after that head was written
(format-2 heads only). A writer appends all of a save's frames in one write at the end of the
last complete commit and fsyncs: the commit record is the commit point. Only the end of a file
can be torn (a killed writer; after a power loss also zero-filled or half-written blocks), and
the next writer truncates it. So bytes that do not parse as a frame (``Unframed``: cut short,
bad magic, bad checksum) with no frame after them (``frame_after``) are an uncommitted tail,
provided they lie beyond the acknowledged end the caller knows (``localread``); anything else
is corruption (fail closed). Compression is per frame (one inflate per save), not per message.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from hookagent.codec import MAX_MESSAGE_BYTES, MAX_STATE_BYTES, decode_msgs
from hookagent.errors import CorruptState, InvalidState, UnsupportedSchemaVersion
from hookagent.messages import Msg

FRAME_MAGIC = b"HAJD"
"""Bodies compressed as raw deflate (no zlib header or adler32: a quarter less to inflate)."""
ZLIB_MAGIC = b"HAJF"
"""Bodies compressed as zlib streams (the first format-2 writers, 2026-11-30 07:30-08:00)."""
FRAME_MAGICS = (FRAME_MAGIC, ZLIB_MAGIC)
_RAW_DEFLATE = -15
_FIXED = struct.Struct(">4sIIIQI")
_CRC = struct.Struct(">I")
_HEADER = struct.Struct(">4sIIIQII")
FRAME_HEADER = _HEADER.size
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
        deflater = zlib.compressobj(6, zlib.DEFLATED, _RAW_DEFLATE)
        packed = deflater.compress(raw) + deflater.flush()
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


def encode_commit(
    messages: Sequence[bytes], state: bytes, version: int, count: int, previous: bytes = b""
) -> bytes:
    """A save's frames: batches for all but the last group, then the commit frame.

    The commit's state part is empty when the state head is ``previous`` (unchanged).
    """
    groups = batches(messages) or [[]]
    head = b"".join(encode_frame(b, 0, len(b)) for b in groups[:-1])
    return head + encode_frame([b"" if state == previous else state, *groups[-1]], version, count)


class Unframed(CorruptState):
    """The bytes at a position are not a frame (bad magic or checksum): torn or damaged."""


Frame = tuple[int, int, int, list[bytes]]
"""``(end, version, count, parts)`` of one frame; a commit's ``parts[0]`` is its state part."""


def read_frame(buf: memoryview, pos: int, where: str) -> Frame | None:
    """The frame at ``pos``, or None when the buffer ends inside it (a torn write).

    Bytes that are not a frame at all raise ``Unframed``; a frame whose checksums hold but
    whose content makes no sense raises ``CorruptState`` (no tear produces that).
    """
    left = len(buf) - pos
    if left < FRAME_HEADER:
        seen = bytes(buf[pos : pos + min(left, 4)])
        if not any(magic.startswith(seen) for magic in FRAME_MAGICS):
            raise Unframed(f"{where}: garbage at byte {pos} of the history file")
        return None
    magic, body_len, raw_len, body_crc, version, count, crc = _HEADER.unpack_from(buf, pos)
    if magic not in FRAME_MAGICS or crc != zlib.crc32(buf[pos : pos + _FIXED.size]):
        raise Unframed(f"{where}: damaged frame header at byte {pos} of the history file")
    if raw_len > FRAME_RAW_MAX or body_len > raw_len:
        raise CorruptState(f"{where}: frame at byte {pos} has bad lengths")
    start = pos + FRAME_HEADER
    end = start + body_len
    if end > len(buf):
        return None
    body = buf[start:end]
    if zlib.crc32(body) != body_crc:
        raise Unframed(f"{where}: checksum mismatch in the frame at byte {pos}")
    if body_len == raw_len:
        raw = bytes(body)
    else:
        raw = _inflate(body, raw_len, _RAW_DEFLATE if magic == FRAME_MAGIC else 15, pos, where)
    parts = raw.split(b"\n")
    if (len(parts) != count or b"" in parts) if not version else b"" in parts[1:]:
        raise CorruptState(f"{where}: frame at byte {pos} does not hold what it says")
    return end, version, count, parts


def header_holds(buf: memoryview, pos: int) -> bool:
    """A whole frame header at ``pos`` with a known magic and a header checksum that holds."""
    if len(buf) - pos < FRAME_HEADER:
        return False
    magic, crc = bytes(buf[pos : pos + 4]), _CRC.unpack_from(buf, pos + _FIXED.size)[0]
    return magic in FRAME_MAGICS and crc == zlib.crc32(buf[pos : pos + _FIXED.size])


def frame_after(buf: bytes, pos: int) -> int | None:
    """Where the first frame header after ``pos`` starts (a magic whose header checksum holds,
    whose body lies wholly within ``buf``), or None.

    Unparsable bytes with such a header after them are not a torn end: something was written
    after them (its body checksum is not asked for: a damaged later commit fails closed too).
    A header whose body runs past the end is itself a torn last frame. A random match needs a
    magic and a crc32 to agree by chance (about 2**-64 per byte).
    """
    found: list[int] = []
    for magic in FRAME_MAGICS:
        at = buf.find(magic, pos + 1)
        while at >= 0:
            if len(buf) - at >= FRAME_HEADER:
                fixed = buf[at : at + _FIXED.size]
                body_len = _HEADER.unpack_from(buf, at)[1]
                crc = _CRC.unpack_from(buf, at + _FIXED.size)[0]
                if crc == zlib.crc32(fixed) and at + FRAME_HEADER + body_len <= len(buf):
                    found.append(at)
                    break
            at = buf.find(magic, at + 1)
    return min(found, default=None)


def _inflate(body: memoryview, raw_len: int, wbits: int, pos: int, where: str) -> bytes:
    inflater = zlib.decompressobj(wbits)
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
