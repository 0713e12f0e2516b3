"""Reading a record file: the committed base a head names, then the commits after it.

The base (bytes ``[0, head.size)``) is committed by the head itself: it must parse whole into
exactly ``head.count`` messages, as format-1 records (``records``) and/or batch frames
(``frames``); a record starts with a length below 1 MiB (first byte 0), a frame with
``HAJD`` (raw deflate; ``HAJF``: zlib, written by the first format-2 commits and still read),
so the two never look alike. The tail after a format-2 head is a sequence of frames;
the last complete commit frame is the newest committed state. Bytes after it that do not parse
as frames (cut short, zero-filled, a bad checksum) and have no frame after them are an
uncommitted leftover of a killed writer or a power loss; the caller (``localread``) still
refuses them when they start before the acknowledged end the ``.end`` hint records.
"""

from __future__ import annotations

import zlib

import attrs
from hookagent.codec import MAX_MESSAGE_BYTES
from hookagent.errors import CorruptState

from .frames import FRAME_HEADER, FRAME_MAGICS, Unframed, frame_after, header_holds, read_frame
from .records import RECORD, unpack


def scan_base(buf: bytes, count: int, where: str) -> list[bytes]:
    """The ``count`` message payloads (JSON) of a head's committed bytes."""
    view = memoryview(buf)
    out: list[bytes] = []
    pos, end = 0, len(view)
    while pos < end:
        if view[pos : pos + 4] in FRAME_MAGICS:
            frame = read_frame(view, pos, where)
            if frame is None or frame[1]:
                raise CorruptState(f"{where}: bad frame at byte {pos} of the committed history")
            out += frame[3]
            pos = frame[0]
            continue
        if end - pos < RECORD.size:
            raise CorruptState(f"{where}: truncated record header at byte {pos}")
        length, crc = RECORD.unpack_from(view, pos)
        pos += RECORD.size
        if length > MAX_MESSAGE_BYTES or length > end - pos:
            raise CorruptState(f"{where}: record at byte {pos - RECORD.size} has bad length")
        payload = view[pos : pos + length]
        if zlib.crc32(payload) != crc:
            raise CorruptState(f"{where}: checksum mismatch in record at byte {pos - RECORD.size}")
        out.append(unpack(bytes(payload), where))
        pos += length
    if len(out) != count:
        raise CorruptState(f"{where}: {len(out)} messages where the head commits {count}")
    return out


@attrs.frozen
class Tail:
    """What the commit frames after a known point add."""

    payloads: list[bytes]
    end: int
    """Offset just after the last complete commit (the writer's append point)."""
    version: int
    count: int
    state: bytes
    """The newest commit's state head."""
    torn: int = -1
    """Offset where unparsable bytes after the last frame start (an uncommitted tail), or -1."""


def scan_tail(buf: bytes, offset: int, version: int, count: int, state: bytes, where: str) -> Tail:
    """Commit frames in ``buf`` (which starts at file ``offset``) after the commit
    ``version``/``count``/``state``."""
    view = memoryview(buf)
    payloads: list[bytes] = []
    pending: list[bytes] = []
    pos = committed = 0
    torn = -1
    while pos < len(view):
        damage: Unframed | None = None
        try:
            frame = read_frame(view, pos, where)
        except Unframed as exc:
            frame, damage = None, exc
        if frame is None:  # torn or damaged: an uncommitted leftover only if nothing follows
            later = frame_after(buf, pos)
            if later is not None:
                raise CorruptState(
                    f"{where}: the bytes at {offset + pos} of the history file are not a frame "
                    f"(cut short, damaged or zeroed) and a frame follows at {offset + later}"
                ) from damage
            torn = offset + pos
            break
        end, fversion, fcount, parts = frame
        if not fversion:
            pending += parts
        else:
            if fversion != version + 1 or fcount != count + len(pending) + len(parts) - 1:
                raise CorruptState(f"{where}: commit at byte {offset + pos} does not follow")
            payloads += pending
            payloads += parts[1:]
            pending = []
            version, count = fversion, fcount
            state = parts[0] or state  # empty: the state head did not change
            committed = end
        pos = end
    return Tail(payloads, offset + committed, version, count, state, torn)


def clean_tear(buf: bytes) -> bool:
    """Whether uncommitted bytes after the last commit are what a tear leaves: whole frames
    (a big save's batches), then zero-filled blocks, or a frame cut short by the end of the
    file (its header too may be cut short, then zero-filled).

    Anything else may be damage to a commit someone was told about, and the writer keeps a
    copy before dropping it (``LocalWrites._keep_torn``): a frame whose declared length fits
    but whose checksum fails (also a frame cut short, then zero-filled up to its declared
    length: the two cannot be told apart), or non-zero bytes that are no prefix of a frame.
    """
    view = memoryview(buf)
    pos = 0
    while pos < len(view):
        if not any(view[pos:]):
            return True  # zero-filled to the end
        try:
            frame = read_frame(view, pos, "the uncommitted tail")
        except Unframed:
            if header_holds(view, pos):
                return False  # a complete-length frame whose checksum fails
            nonzero = len(buf.rstrip(b"\0"))  # a header cut short, then zero-filled?
            if nonzero - pos >= FRAME_HEADER:
                return False
            try:
                return read_frame(view[:nonzero], pos, "the uncommitted tail") is None
            except CorruptState:
                return False
        except CorruptState:
            return False  # checksums hold, content does not: no tear makes that
        if frame is None:
            return True  # a frame cut short by the end of the file
        pos = frame[0]
    return True
