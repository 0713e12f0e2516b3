"""The local log's index cache (``logindex``): a cold handle reads it and scans only the
records after it; a cache that fails any check, or cannot be written, changes nothing a
handle reads or decides (it scans every record instead)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import pytest
from hookagent.errors import BatchConflict, OwnerSealed
from hookagent.sessionlog import LogEvent
from hookagent_store_jsonfile import JsonFileSessionLog, logindex, logsegment
from hookagent_store_jsonfile.layout import id_parts
from hookagent_store_jsonfile.logfiles import LOG_DIR

pytestmark = pytest.mark.anyio
U, S = "u:1", "s/1"
EVERY = 8


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def small_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logindex, "EVERY", EVERY)


def cache_file(root: Path) -> Path:
    return root / LOG_DIR / Path(*id_parts(U), *id_parts(S)) / logindex.NAME


def ev(n: int) -> list[LogEvent]:
    return [LogEvent("message/appended", {"n": n, "i": i}) for i in range(2)]


async def filled(log: JsonFileSessionLog, commits: int) -> Any:
    """``commits`` commits by two runs, the first one finished (sealed); the second's
    writer."""
    w = await log.acquire(U, S, "run-1", 60)
    half = commits // 2
    for i in range(half):
        await log.commit(w, f"b{i}", 2 * i, ev(i), finish=i == half - 1)
    w = await log.acquire(U, S, "run-2", 60)
    for i in range(half, commits):
        await log.commit(w, f"b{i}", 2 * i, ev(i))
    return w


def index_of(log: JsonFileSessionLog) -> Any:
    core = log._core

    def step(ses: Any) -> Any:
        return logsegment.index(ses, core._read(ses, "test"), "test")

    return core.locked(U, S, step, create=False, exclusive=False, absent=lambda: None)


def fields(idx: Any) -> dict[str, Any]:
    return {k: v for k, v in attrs.asdict(idx, recurse=False).items() if k != "cached"}


def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets of the record headers a handle parses from now on."""
    seen: list[int] = []
    real = logsegment._header

    def header(buf: bytes, at: int, where: str, off: int) -> Any:
        seen.append(off)
        return real(buf, at, where, off)

    monkeypatch.setattr(logsegment, "_header", header)
    return seen


async def test_a_cold_handle_reads_the_cache_and_scans_only_the_records_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = JsonFileSessionLog(tmp_path)
    await filled(log, 21)
    assert cache_file(tmp_path).exists()
    events = await log.read_after(U, S, 0)
    full = fields(index_of(log))
    cached = logindex.decode(
        cache_file(tmp_path).read_bytes(), full["life"], logsegment.START, full["end"]
    )
    assert cached is not None
    held = len(cached["starts"])
    assert held == 16  # written at 8 and 16 records, not at every commit

    seen = scanned(monkeypatch)
    cold = log.another_handle()
    assert fields(index_of(cold)) == full
    # the cache's last record (checked), then the five records after it: not all 21
    assert seen == [cached["offsets"][-1], *full["offsets"][held:]]
    assert await cold.read_after(U, S, 0) == events
    assert (await cold.list_session_ids(U)).session_ids == (S,)  # a file, not a session


async def test_seals_and_batch_ids_hold_through_the_cache(tmp_path: Path) -> None:
    log = JsonFileSessionLog(tmp_path)
    await log.release(await filled(log, 18))
    cold = log.another_handle()
    with pytest.raises(OwnerSealed):
        await cold.acquire(U, S, "run-1", 60)
    w = await cold.acquire(U, S, "run-3", 60)
    head = (await cold.head(U, S)).seq
    with pytest.raises(BatchConflict, match=r"seqs 7\.\.8"):  # an old batch id, other content
        await cold.commit(w, "b3", head, ev(99))


def _damaged(raw: bytes, life: str) -> dict[str, bytes]:
    idx = logindex.decode(raw, life, logsegment.START, 1 << 40)
    assert idx is not None
    base = logsegment.Index(life, **{k: idx[k] for k in ("starts", "offsets", "lasts")})
    base.end, base.batches, base.sealed = idx["end"], idx["batches"], idx["sealed"]
    shifted = attrs.evolve(base, offsets=[o + 1 for o in base.offsets])
    last_wrong = attrs.evolve(base, lasts=[*base.lasts[:-1], base.lasts[-1] + 1])
    flipped = bytearray(raw)
    flipped[-5] ^= 0x01
    return {
        "crc": bytes(flipped),
        "short": raw[:-10],
        "magic": b"X" + raw[1:],
        "other life": logindex.encode(attrs.evolve(base, life="0" * 16)),
        "past the head": logindex.encode(attrs.evolve(base, end=base.end + 4096)),
        "offsets": logindex.encode(shifted),
        "last record": logindex.encode(last_wrong),
        "not json": logindex.MAGIC + raw[8:16] + b"{" * (len(raw) - 16),
    }


@pytest.mark.parametrize(
    "damage",
    ["crc", "short", "magic", "other life", "past the head", "offsets", "last record", "not json"],
)
async def test_a_cache_that_fails_a_check_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    log = JsonFileSessionLog(tmp_path)
    await filled(log, 20)
    events = await log.read_after(U, S, 0)
    full = fields(index_of(log))
    path = cache_file(tmp_path)
    path.write_bytes(_damaged(path.read_bytes(), full["life"])[damage])
    seen = scanned(monkeypatch)
    cold = log.another_handle()
    assert fields(index_of(cold)) == full
    assert len(seen) >= len(full["offsets"])  # every record scanned
    assert await cold.read_after(U, S, 0) == events
    assert logindex.decode(path.read_bytes(), full["life"], logsegment.START, full["end"])


async def test_a_cache_that_cannot_be_written_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kw: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    log = JsonFileSessionLog(tmp_path)
    await filled(log, 20)
    assert not cache_file(tmp_path).exists()
    assert os.listdir(cache_file(tmp_path).parent) == ["head"]  # no temp file left
    assert [e.payload["n"] for e in await log.another_handle().read_after(U, S, 0)] == [
        i // 2 for i in range(40)
    ]


async def test_a_deleted_session_takes_its_cache_and_a_new_one_starts_its_own(
    tmp_path: Path,
) -> None:
    log = JsonFileSessionLog(tmp_path)
    await filled(log, 20)
    assert await log.delete(U, S)
    assert not cache_file(tmp_path).parent.exists()
    w = await log.acquire(U, S, "run-9", 60)
    await log.commit(w, "new", 0, ev(0))
    assert [e.payload["n"] for e in await log.another_handle().read_after(U, S, 0)] == [0, 0]
