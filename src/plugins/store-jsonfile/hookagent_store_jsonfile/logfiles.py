"""The session log's on-disk records, shared by local disk and fsspec: heads, commits, names.

A commit file holds one batch exactly as ``encode_commit`` made it, behind a checksummed
header naming its seqs, batch_id and digest, so a reader can tell a whole commit from a torn
or foreign one without parsing an event. A head record is a small checksummed JSON object.
Names never contain user data: a session directory is ``encode_id``'d (``layout.id_parts``),
a batch_id or a sealed owner is hashed into a fixed-length name.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from typing import Any

import orjson
from hookagent.codec import dumps, loads
from hookagent.errors import CorruptState, InvalidState, LogCorrupt
from hookagent.sessionlog import MAX_BATCH_BYTES, LogHead

LOG_DIR = ".sessionlog"
"""The log's tree below the root: private (a dot name), so a state store on the same root
never lists, sweeps or removes it, and a state key can never collide with it."""
COMMIT_MAGIC = b"HALOGC1\n"
HEAD_MAGIC = b"HALOGH1\n"
_FIXED = struct.Struct(">III")
_HEAD_FIXED = struct.Struct(">II")
SLOT = 4096
"""Bytes per head slot (the local head file has two, written alternately)."""
SEQ_WIDTH = 16
_COMMIT_NAME = re.compile(r"c(\d{16})$")


def commit_name(first: int) -> str:
    """``c<first seq, zero-padded>``: sorted names are seq order."""
    return f"c{first:0{SEQ_WIDTH}d}"


def commit_first(name: str) -> int | None:
    m = _COMMIT_NAME.match(name)
    return int(m.group(1)) if m else None


def _hashed(prefix: str, value: str) -> str:
    return prefix + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:48]


def batch_name(batch_id: str) -> str:
    """The batch index entry of ``batch_id`` (a hard link to its commit file on local disk)."""
    return _hashed("b", batch_id)


def seal_name(owner: str) -> str:
    """The marker of a sealed owner."""
    return _hashed("s", owner)


def flat_json(doc: dict[str, Any]) -> bytes:
    """``codec.dumps``'s bytes for a flat object of checked scalars (a head, a record's
    header: ints, floats, None and ids ``check_id`` passed): nothing nests, and a head
    record's size is checked against its slot, so the depth walk and the size bound have
    nothing to refuse."""
    try:
        return orjson.dumps(doc)
    except TypeError as exc:  # (not reached with checked ids: the codec's error, kept)
        raise InvalidState(f"a log header is not JSON-serialisable: {exc}") from None


# ---------------------------------------------------------------- commits


def encode_commit_file(first: int, last: int, batch_id: str, digest: str, data: bytes) -> bytes:
    meta = dumps({"f": first, "l": last, "b": batch_id, "d": digest}, what="log commit header")
    body = meta + data
    return COMMIT_MAGIC + _FIXED.pack(len(meta), len(data), zlib.crc32(body)) + body


def decode_commit_file(raw: bytes, where: str, name: str) -> tuple[dict[str, Any], bytes]:
    """(header, batch bytes) of a commit file; ``LogCorrupt`` if it is not whole."""
    fixed = len(COMMIT_MAGIC) + _FIXED.size
    if len(raw) < fixed or not raw.startswith(COMMIT_MAGIC):
        raise LogCorrupt(f"{where}: commit file {name} is not a commit (bad magic or cut short)")
    meta_len, data_len, crc = _FIXED.unpack_from(raw, len(COMMIT_MAGIC))
    body = raw[fixed:]
    if meta_len + data_len != len(body) or data_len > MAX_BATCH_BYTES or zlib.crc32(body) != crc:
        raise LogCorrupt(f"{where}: commit file {name} is damaged (length or checksum)")
    try:
        meta = loads(body[:meta_len], what="log commit header")
    except CorruptState:
        meta = None
    if (
        not isinstance(meta, dict)
        or not all(type(meta.get(k)) is int and meta[k] >= 1 for k in ("f", "l"))
        or meta["l"] < meta["f"]
        or not isinstance(meta.get("b"), str)
        or not isinstance(meta.get("d"), str)
    ):
        raise LogCorrupt(f"{where}: commit file {name} has a malformed header")
    return meta, body[meta_len:]


# ---------------------------------------------------------------- heads


def head_doc(head: LogHead, *, counter: int, last_first: int, life: str) -> dict[str, Any]:
    """A head as stored: the kernel's fields, the write counter, where the last commit
    starts (an index check) and the log's incarnation (``life``, new after a delete)."""
    return {
        "n": counter,
        "seq": head.seq,
        "epoch": head.epoch,
        "owner": head.owner,
        "lease": head.lease_until,
        "cid": head.commit_id,
        "ck": head.checkpoint_seq,
        "lf": last_first,
        "life": life,
    }


def encode_head_record(doc: dict[str, Any]) -> bytes:
    body = flat_json(doc)
    out = HEAD_MAGIC + _HEAD_FIXED.pack(len(body), zlib.crc32(body)) + body
    if len(out) > SLOT:  # ids are at most 256 characters: about 3.5 KiB at worst
        raise LogCorrupt(f"a log head of {len(out)} bytes does not fit a {SLOT}-byte slot")
    return out


def head_record_size(raw: bytes) -> int:
    """The length of the head record ``raw`` starts with (``raw`` decoded as one)."""
    return (
        len(HEAD_MAGIC) + _HEAD_FIXED.size + int(_HEAD_FIXED.unpack_from(raw, len(HEAD_MAGIC))[0])
    )


def decode_head_record(raw: bytes) -> dict[str, Any] | None:
    """The head in one slot, or None when the slot is empty, torn or damaged. A function
    of the record's bytes alone (magic, size, crc and body), not of what follows them."""
    fixed = len(HEAD_MAGIC) + _HEAD_FIXED.size
    if len(raw) < fixed or not raw.startswith(HEAD_MAGIC):
        return None
    size, crc = _HEAD_FIXED.unpack_from(raw, len(HEAD_MAGIC))
    body = raw[fixed : fixed + size]
    if len(body) != size or zlib.crc32(body) != crc:
        return None
    try:
        doc = loads(body, what="log head")
    except CorruptState:
        return None
    ints = ("n", "seq", "epoch", "ck", "lf")
    if (
        not isinstance(doc, dict)
        or not all(type(doc.get(k)) is int and doc[k] >= 0 for k in ints)
        or type(doc.get("lease")) not in (int, float)
        or not all(doc.get(k) is None or isinstance(doc[k], str) for k in ("owner", "cid"))
        or not isinstance(doc.get("life"), str)
        or ("fmt" in doc and not _format2_fields(doc))
    ):
        return None
    return doc


def _format2_fields(doc: dict[str, Any]) -> bool:
    """A format-2 head's fields (``logsegment``): the records end at ``end``, the last one
    starts at ``lo`` (0: none yet, then ``end`` is where the first one will start)."""
    end, lo = doc.get("end"), doc.get("lo")
    return (
        doc.get("fmt") == 2
        and type(end) is int
        and type(lo) is int
        and end >= 2 * SLOT
        and ((lo == 0 and end == 2 * SLOT) or 2 * SLOT <= lo < end)
    )


def head_of(doc: dict[str, Any] | None) -> LogHead:
    if doc is None:
        return LogHead()
    return LogHead(
        doc["seq"], doc["epoch"], doc["owner"], float(doc["lease"]), doc["cid"], doc["ck"]
    )
