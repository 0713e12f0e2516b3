"""The local session log's per-commit and cold-read work (issue 21), counted, never timed:
a warm commit decodes no head record, a cold read reads the records once; and what those
shortcuts must not change (a head another handle wrote is seen, the bytes are the codec's,
a format-1 read checks what a format-2 read checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hookagent.codec import dumps
from hookagent.errors import LogCorrupt, LogFenced
from hookagent.sessionlog import LogEvent, LogHead, encode_commit
from hookagent_store_jsonfile import JsonFileSessionLog, logfiles, loglocal, posixio
from hookagent_store_jsonfile.layout import id_parts
from hookagent_store_jsonfile.logfiles import (
    COMMIT_MAGIC,
    LOG_DIR,
    SLOT,
    commit_name,
    encode_commit_file,
    encode_head_record,
    flat_json,
    head_doc,
)

pytestmark = pytest.mark.anyio
U, S = "u:1", "s/1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sdir(root: Path) -> Path:
    return root / LOG_DIR / Path(*id_parts(U), *id_parts(S))


def ev(n: int) -> list[LogEvent]:
    return [LogEvent("acme/x", {"n": n, "i": i}) for i in range(2)]


async def test_a_warm_commit_decodes_no_head_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head slots this handle decoded or wrote are not decoded again while their bytes
    are unchanged; a slot another handle wrote is (and its lease fences this writer)."""
    log = JsonFileSessionLog(tmp_path)
    w = await log.acquire(U, S, "run-1", 60)
    for i in range(3):
        await log.commit(w, f"b{i}", 2 * i, ev(i))
    decoded: list[int] = []
    real = logfiles.decode_head_record

    def counting(raw: bytes) -> Any:
        decoded.append(len(raw))
        return real(raw)

    monkeypatch.setattr(loglocal, "decode_head_record", counting)  # (the name it calls)
    await log.commit(w, "warm", 6, ev(9))
    assert decoded == []  # was 2: both slots, every commit
    assert (await log.head(U, S)).seq == 8
    other = log.another_handle()
    w2 = await other.acquire(U, S, "run-1", 60)  # (a new epoch: fences ``w``)
    decoded.clear()
    with pytest.raises(LogFenced):
        await log.commit(w, "late", 8, ev(10))
    assert decoded  # the slot the other handle wrote was read, not the cached one
    done = await other.commit(w2, "next", 8, ev(11))
    assert (done.first_seq, (await log.head(U, S)).seq) == (9, 10)
    assert [e.payload["n"] for e in await log.read_after(U, S, 8)] == [11, 11]
    await log.aclose()
    await other.aclose()


async def test_a_slot_rewritten_behind_the_handle_is_decoded(tmp_path: Path) -> None:
    """A slot whose bytes changed under the same head length (a planted newer head) is
    decoded, not taken from the cache: its own bytes decide."""
    log = JsonFileSessionLog(tmp_path)
    w = await log.acquire(U, S, "run-1", 60)
    await log.commit(w, "b0", 0, ev(0))
    path = sdir(tmp_path) / "head"
    raw = bytearray(path.read_bytes())
    core = log._core

    def newest(ses: Any) -> Any:
        return core._read(ses, "t")

    doc = core.locked(U, S, newest, create=False, exclusive=False, absent=lambda: None)
    moved = dict(doc, n=int(doc["n"]) + 1, owner=None, lease=0.0)
    record = encode_head_record(moved)
    at = (int(moved["n"]) % 2) * SLOT
    raw[at : at + len(record)] = record
    path.write_bytes(bytes(raw))
    assert (await log.head(U, S)).owner is None  # the planted head, decoded
    with pytest.raises(LogFenced):
        await log.commit(w, "b1", 2, ev(1))
    await log.aclose()


async def test_a_cold_read_reads_the_records_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh handle's first read indexes the records and returns them from the same
    bytes (it read them twice: once to index, once to return), every record crc-checked."""
    log = JsonFileSessionLog(tmp_path)
    w = await log.acquire(U, S, "run-1", 60)
    for i in range(300):  # more than one 256-record chunk
        await log.commit(w, f"b{i}", 2 * i, ev(i))
    await log.aclose()
    size = (sdir(tmp_path) / "head").stat().st_size
    # without the index cache (``logindex``; with it, a cold handle reads only the records
    # past it to index them: ``test_sessionlog_index_cache.py``)
    (sdir(tmp_path) / "index").unlink()
    read: list[int] = []
    real = posixio.pread_exact

    def counting(fd: int, n: int, off: int) -> bytes:
        read.append(n)
        got: bytes = real(fd, n, off)
        return got

    monkeypatch.setattr(posixio, "pread_exact", counting)  # (logsegment's ``io``)
    fresh = JsonFileSessionLog(tmp_path)
    rows = await fresh.read_rows_after(U, S, 0)
    records = size - 2 * SLOT
    # once, plus the head's last record checked at a handle's first read (was 2x)
    assert records <= sum(read) < records * 1.1
    assert [r[0] for r in rows] == list(range(1, 601))
    monkeypatch.undo()
    events = await JsonFileSessionLog(tmp_path).read_after(U, S, 0)
    assert [r[4] for r in rows] == [e.payload for e in events]
    tail = await fresh.read_rows_after(U, S, 595)  # warm: only the records it needs
    assert [r[0] for r in tail] == [596, 597, 598, 599, 600]
    await fresh.aclose()


async def test_a_damaged_record_fails_the_cold_single_read(tmp_path: Path) -> None:
    log = JsonFileSessionLog(tmp_path)
    w = await log.acquire(U, S, "run-1", 60)
    for i in range(5):
        await log.commit(w, f"b{i}", 2 * i, ev(i))
    await log.aclose()
    path = sdir(tmp_path) / "head"
    raw = bytearray(path.read_bytes())
    starts = [i for i in range(2 * SLOT, len(raw)) if raw.startswith(COMMIT_MAGIC, i)]
    raw[starts[3] - 3] ^= 0x01  # the third record's batch bytes: its header stays readable
    path.write_bytes(bytes(raw))
    with pytest.raises(LogCorrupt, match="crc"):
        await JsonFileSessionLog(tmp_path).read_rows_after(U, S, 0)
    with pytest.raises(LogCorrupt, match="crc"):
        await JsonFileSessionLog(tmp_path).read_after(U, S, 0)


@pytest.mark.parametrize(
    "owner", ["run-1", "r\u00e9sum\u00e9 \U0001f600", 'q"uote\\back\nslash', "x" * 256]
)
def test_head_and_record_headers_are_the_codecs_bytes(owner: str) -> None:
    """``flat_json`` skips the codec's walks, not its output: byte for byte the same."""
    head = LogHead(7, 3, owner, 1234.5, f"cid-{owner}", 2)
    doc = head_doc(head, counter=9, last_first=5, life="0123abcd")
    doc.update({"fmt": 2, "end": 9000, "lo": 8192})
    assert flat_json(doc) == dumps(doc)
    meta = {"f": 1, "l": 3, "b": owner, "d": "ab" * 32, "s": owner}
    assert flat_json(meta) == dumps(meta)
    free = head_doc(LogHead(), counter=1, last_first=0, life="ff")
    assert flat_json(free) == dumps(free)


async def test_format1_read_after_checks_what_read_rows_checks(tmp_path: Path) -> None:
    """A format-1 commit file whose header names more seqs than its batch holds (crc
    valid): both reads fail closed (``read_after`` returned its events before)."""
    log = JsonFileSessionLog(tmp_path)
    log._core.new_format = 1
    w = await log.acquire(U, S, "run-1", 60)
    await log.commit(w, "b0", 0, ev(0))
    data, digest = encode_commit(ev(0))
    (sdir(tmp_path) / commit_name(1)).write_bytes(encode_commit_file(1, 3, "b0", digest, data))
    await log.aclose()
    for read in ("read_after", "read_rows_after"):
        with pytest.raises(LogCorrupt, match="does not match its record"):
            await getattr(JsonFileSessionLog(tmp_path), read)(U, S, 0)
