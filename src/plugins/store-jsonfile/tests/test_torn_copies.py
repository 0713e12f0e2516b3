"""A stale or lost ``.end`` hint and damage to the last acknowledged commit (a5ab04e's risk).

Without a usable hint, damage to the last acknowledged frame looks like an uncommitted tail.
The instance that saw the commit fails closed (its ``seen`` memory knows where it ends);
anyone else reads the older version, and the writer that drops the bytes first copies them
to ``.torn.<gen>.<offset>`` and logs a warning. Clean tears (zeros, a frame cut short) are
dropped without a copy.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import time
from pathlib import Path

import pytest
from hookagent.codec import encode_head, encode_msg
from hookagent.errors import CorruptState, StorageFull
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent.store.base import UNCONDITIONAL
from hookagent_store_jsonfile import LocalJsonFileStore, posixio
from hookagent_store_jsonfile.cache import Seen
from hookagent_store_jsonfile.frames import FRAME_HEADER, encode_batches, encode_commit
from hookagent_store_jsonfile.layout import id_parts, slot_parts
from hookagent_store_jsonfile.logscan import clean_tear

pytestmark = pytest.mark.anyio
LOGGER = "hookagent_store_jsonfile"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def key_dir(root: Path) -> Path:
    return root.joinpath(*slot_parts("u", "s"), *id_parts("agent_state"))


def the_log(root: Path) -> Path:
    (log,) = [p for p in key_dir(root).iterdir() if p.name.endswith(".log")]
    return log


def copies(root: Path) -> list[Path]:
    return sorted(p for p in key_dir(root).iterdir() if p.name.startswith(".torn."))


async def grow(store: LocalJsonFileStore, tag: str) -> int:
    got = await store.get_versioned("u", "s")
    state = got.state or AgentState("s", "u")
    state.context.append(Msg.user(tag))
    return await store.save_if_version("u", "s", state, got.version)


async def texts(store: LocalJsonFileStore) -> list[str]:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    return [m.text for m in got.state.context]


async def acknowledged_then_damaged(
    root: Path, store: LocalJsonFileStore, hint: str, damage: str = "flip"
) -> tuple[int, bytes]:
    """v1, v2 (append), v3 (append, acknowledged); then the hint goes stale or missing and
    v3's frame is damaged. Returns where v3 starts and the file's bytes."""
    await grow(store, "m0")
    await grow(store, "a")
    end = key_dir(root) / ".end"
    stale = end.read_bytes()
    start = the_log(root).stat().st_size
    assert await grow(store, "b-acknowledged") == 3
    if hint == "stale":
        end.write_bytes(stale)  # lost in a crash, or its best-effort write failed
    else:
        end.unlink()
    log = the_log(root)
    data = bytearray(log.read_bytes())
    if damage == "flip":
        data[-3] ^= 0x01  # one flipped bit in v3's body
    else:
        del data[-7:]  # v3's frame cut short
    log.write_bytes(bytes(data))
    return start, bytes(data)


@pytest.mark.parametrize("hint", ["stale", "missing"])
@pytest.mark.parametrize("damage", ["flip", "cut"])
async def test_the_instance_that_saw_the_commit_fails_closed(
    tmp_path: Path, hint: str, damage: str
) -> None:
    """Its memory of the slot (version 3 of this generation, ending at byte N) stands in for
    the lost hint: loads and saves raise CorruptState, nothing is truncated or copied."""
    store = LocalJsonFileStore(tmp_path, cache_slots=0)
    _, data = await acknowledged_then_damaged(tmp_path, store, hint, damage)
    with pytest.raises(CorruptState, match="a commit this process saw acknowledged is missing"):
        await store.get_versioned("u", "s")
    with pytest.raises(CorruptState, match="a commit this process saw acknowledged is missing"):
        await store.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL)
    assert the_log(tmp_path).read_bytes() == data and copies(tmp_path) == []


async def test_a_cut_is_caught_with_the_history_cache_on_too(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    _, data = await acknowledged_then_damaged(tmp_path, store, "missing", "cut")
    with pytest.raises(CorruptState, match="saw acknowledged"):
        await store.get_versioned("u", "s")
    with pytest.raises(CorruptState, match="saw acknowledged"):
        await grow(store, "c")
    assert the_log(tmp_path).read_bytes() == data


async def test_a_version_below_the_one_seen_in_the_same_generation_fails_closed(
    tmp_path: Path,
) -> None:
    """The version check behind the byte check (a memory with no commit end: a rewrite's)."""
    store = LocalJsonFileStore(tmp_path, cache_slots=0)
    await grow(store, "m0")
    seen = store._core.seen.get(("u", "s", "agent_state"))
    assert seen is not None and seen.version == 1
    store._core.seen.put(("u", "s", "agent_state"), Seen(5, seen.gen, 0))
    with pytest.raises(CorruptState, match="saw version 5 of the same generation"):
        await store.get_versioned("u", "s")


@pytest.mark.parametrize("hint", ["stale", "missing"])
@pytest.mark.parametrize("save", ["append", "rewrite"])
async def test_another_instance_reads_the_older_version_and_the_bytes_are_kept(
    tmp_path: Path, hint: str, save: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Documented: read as version 2 with no error; the next writer copies v3's damaged frame
    to ``.torn.<gen>.<start>`` (0600, fsynced) and logs a warning before dropping it."""
    start, data = await acknowledged_then_damaged(tmp_path, LocalJsonFileStore(tmp_path), hint)
    gen = the_log(tmp_path).name[1:-4]
    fresh = LocalJsonFileStore(tmp_path, cache_slots=0)
    assert await texts(fresh) == ["m0", "a"]  # the older version, no error
    assert copies(tmp_path) == []  # readers copy (and cut) nothing
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        writer = LocalJsonFileStore(tmp_path)
        if save == "append":
            assert await grow(writer, "c") == 3  # (version 3 is issued again)
        else:
            assert await writer.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL) == 3
    (kept,) = copies(tmp_path)
    assert kept.name == f".torn.{gen}.{start}"
    assert kept.read_bytes() == data[start:]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "user_id='u' session_id='s'" in message and str(key_dir(tmp_path) / kept.name) in message
    # housekeeping: kept by any sweep, ignored by listing, removed with the slot
    old = time.time() - 10 * 86400
    os.utime(kept, (old, old))
    assert await LocalJsonFileStore(tmp_path, sweep_after=0).sweep(older_than=0) == 0
    await grow(LocalJsonFileStore(tmp_path, sweep_after=0), "d")  # the per-slot sweep too
    assert kept.exists()
    assert (await writer.list_session_ids("u")).session_ids == ("s",)
    assert await writer.delete("u", "s", "agent_state")
    assert not key_dir(tmp_path).exists()


@pytest.mark.parametrize("tear", ["zeros", "cut", "cut_then_zeros"])
async def test_a_clean_tear_is_dropped_without_a_copy(
    tmp_path: Path, tear: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = LocalJsonFileStore(tmp_path)
    await grow(store, "m0")
    await grow(store, "a")
    log = the_log(tmp_path)
    committed = log.read_bytes()
    frame = encode_commit([encode_msg(Msg.user("lost"))], encode_head(AgentState("s", "u")), 3, 3)
    torn = {"zeros": b"\0" * 4096, "cut": frame[:-5], "cut_then_zeros": frame[:40] + b"\0" * 99}
    log.write_bytes(committed + torn[tear])
    (key_dir(tmp_path) / ".end").unlink()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert await grow(LocalJsonFileStore(tmp_path), "c") == 3
    assert copies(tmp_path) == [] and not [r for r in caplog.records if r.name == LOGGER]
    assert await texts(LocalJsonFileStore(tmp_path)) == ["m0", "a", "c"]


async def test_a_copy_never_overwrites_an_earlier_one(tmp_path: Path) -> None:
    start, data = await acknowledged_then_damaged(tmp_path, LocalJsonFileStore(tmp_path), "stale")
    gen = the_log(tmp_path).name[1:-4]
    earlier = key_dir(tmp_path) / f".torn.{gen}.{start}"
    earlier.write_bytes(b"an earlier copy")
    await grow(LocalJsonFileStore(tmp_path), "c")
    assert earlier.read_bytes() == b"an earlier copy"
    (other,) = [p for p in copies(tmp_path) if p != earlier]
    assert other.name.startswith(earlier.name + ".") and other.read_bytes() == data[start:]


async def test_no_copy_no_cut_when_the_copy_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Disk full while copying: StorageFull, the record file untouched, no partial copy."""
    _, data = await acknowledged_then_damaged(tmp_path, LocalJsonFileStore(tmp_path), "missing")
    real = posixio.write_all

    def full(fd: int, chunk: bytes, offset: int | None = None) -> None:
        if offset is None and chunk == data[-len(chunk) :]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, chunk, offset)

    monkeypatch.setattr(posixio, "write_all", full)
    with pytest.raises(StorageFull):
        await grow(LocalJsonFileStore(tmp_path), "c")
    assert the_log(tmp_path).read_bytes() == data and copies(tmp_path) == []


def test_clean_tear_tells_tears_from_damage() -> None:
    commit = encode_commit([encode_msg(Msg.user("x" * 300))], b'{"session_id":"s"}', 2, 2)
    batches = encode_batches([encode_msg(Msg.user(f"m{i}")) for i in range(3)])
    save = batches + commit  # one save of several frames
    starts = [0, len(batches)]
    for cut in range(len(save) + 1):
        assert clean_tear(save[:cut]), cut  # cut short by the end of the file
        start = max(s for s in starts if s <= cut)
        end = len(batches) if start == 0 else len(save)
        if cut - start < FRAME_HEADER:  # the header cut short, then zero-filled
            if any(save[cut : start + FRAME_HEADER]):  # (unless the zeros complete it: the
                assert clean_tear(save[:cut] + b"\0" * 700), cut  # crc's last byte is 0)
        elif cut < end:  # the body cut short: zeros short of its length, or up to it
            assert clean_tear(save[:cut] + b"\0" * (end - cut - 1)), cut
            if any(save[cut:end]):  # (zeros that are the frame's own bytes make it whole)
                assert not clean_tear(save[:cut] + b"\0" * (end - cut)), cut  # ambiguous: kept
    for at in range(len(commit)):  # a complete frame with any bit flipped is damage
        flipped = bytearray(commit)
        flipped[at] ^= 0x10
        assert not clean_tear(bytes(flipped)), at
        assert not clean_tear(bytes(flipped) + b"\0" * 100), at
    assert not clean_tear(b"\0" * 32 + commit[32:])  # a zeroed header before its body
    assert not clean_tear(b"garbage")
    assert not clean_tear(batches + b"XXXX" + commit[4:])
    assert clean_tear(batches + b"\0" * 5000)


async def test_a_failing_rewrite_retried_keeps_one_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite that fails after the copy leaves the damaged bytes in place; each retry,
    from any instance, must find the copy it made before instead of adding another."""
    start, data = await acknowledged_then_damaged(tmp_path, LocalJsonFileStore(tmp_path), "stale")
    real = posixio.write_all

    def full(fd: int, chunk: bytes, offset: int | None = None) -> None:
        if offset is None and chunk != data[start:]:  # the new generation file, not the copy
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, chunk, offset)

    monkeypatch.setattr(posixio, "write_all", full)
    retrying = LocalJsonFileStore(tmp_path)
    for store in (LocalJsonFileStore(tmp_path), LocalJsonFileStore(tmp_path), retrying, retrying):
        with pytest.raises(StorageFull):
            await store.save_if_version("u", "s", AgentState("s", "u"), UNCONDITIONAL)
    (kept,) = copies(tmp_path)
    assert kept.read_bytes() == data[start:] and the_log(tmp_path).read_bytes() == data


async def test_a_symlink_planted_at_the_copy_name_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_bytes(b"keep")
    start, data = await acknowledged_then_damaged(root, LocalJsonFileStore(root), "stale")
    gen = the_log(root).name[1:-4]
    planted = key_dir(root) / f".torn.{gen}.{start}"
    planted.symlink_to(outside / "precious")
    assert await grow(LocalJsonFileStore(root), "c") == 3
    assert (outside / "precious").read_bytes() == b"keep" and planted.is_symlink()
    (kept,) = [p for p in copies(root) if p != planted]
    assert kept.name.startswith(planted.name + ".") and kept.read_bytes() == data[start:]
