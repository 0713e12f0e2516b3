"""The save protocol on disk: appends stay appends, torn tails recover, corruption fails closed,
loads read only what is new, stale temp files are swept."""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

import pytest
from hookagent.codec import encode_head, encode_msg
from hookagent.errors import CorruptState
from hookagent.messages import Msg
from hookagent.state import AgentState
from hookagent_store_jsonfile import LocalJsonFileStore, posixio
from hookagent_store_jsonfile.frames import encode_commit
from hookagent_store_jsonfile.layout import id_parts, slot_parts
from hookagent_store_jsonfile.records import decode_head_bytes, frame

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def key_dir(root: Path, user: str = "u", session: str = "s", key: str = "agent_state") -> Path:
    return root.joinpath(*slot_parts(user, session), *id_parts(key))


def the_log_of(root: Path, session: str) -> Path:
    return next(p for p in key_dir(root, session=session).iterdir() if p.name.endswith(".log"))


def the_log(root: Path) -> Path:
    logs = [p for p in key_dir(root).iterdir() if p.name.endswith(".log")]
    assert len(logs) == 1, logs
    return logs[0]


async def grow(store: LocalJsonFileStore, n: int, tag: str = "m") -> int:
    got = await store.get_versioned("u", "s")
    state = got.state or AgentState("s", "u")
    state.context.extend(Msg.user(f"{tag}{i}") for i in range(n))
    return await store.save_if_version("u", "s", state, got.version)


async def texts(store: LocalJsonFileStore) -> list[str]:
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    return [m.text for m in got.state.context]


async def test_appends_do_not_rewrite_the_history(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 400, "old")
    log = the_log(tmp_path)
    ino, prefix = log.stat().st_ino, log.read_bytes()
    head_bytes = (key_dir(tmp_path) / "head").read_bytes()
    for turn in range(5):
        await grow(store, 4, f"t{turn}-")
    assert the_log(tmp_path) == log and log.stat().st_ino == ino  # same file, same generation
    assert log.read_bytes().startswith(prefix)  # the old bytes were never touched
    # appends leave the head: a first save's (format 3) is the record file's first bytes
    assert (key_dir(tmp_path) / "head").samefile(log)
    head = decode_head_bytes(head_bytes, "t")
    assert head_bytes == prefix and head.start > 0
    assert log.read_bytes()[: head.start] == prefix[: head.start]
    assert head.count == 400 and head.size == len(prefix) and head.version == 1 and head.tail
    got = await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    assert got.version == 6 and got.state is not None and len(got.state.context) == 420
    # a changed prefix rewrites into a new generation and removes the old file
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.context.pop(0)
    await store.save_if_version("u", "s", got.state, got.version)
    assert the_log(tmp_path) != log and not log.exists()
    assert len(await texts(store)) == 419


async def test_torn_tail_is_ignored_then_truncated(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    log = the_log(tmp_path)
    committed = log.read_bytes()
    # a writer died after writing part of its commit frame
    frames = encode_commit([encode_msg(Msg.user("lost"))], b'{"session_id":"s"}', 2, 4)
    with open(log, "ab") as fh:
        fh.write(frames[: len(frames) - 5])
    for reader in (store, LocalJsonFileStore(tmp_path)):
        assert await texts(reader) == ["m0", "m1", "m2"]
    await grow(store, 1, "next")
    assert log.read_bytes().startswith(committed)
    assert await texts(LocalJsonFileStore(tmp_path)) == ["m0", "m1", "m2", "next0"]


@pytest.mark.parametrize("where", ["first", "middle", "last"])
async def test_corruption_inside_committed_bytes_fails_closed(tmp_path: Path, where: str) -> None:
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 5)
    log = the_log(tmp_path)
    data = bytearray(log.read_bytes())
    offset = {"first": 12, "middle": len(data) // 2, "last": len(data) - 3}[where]
    data[offset] ^= 0x55
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptState):
        await LocalJsonFileStore(tmp_path).get_versioned("u", "s")


async def test_truncated_committed_bytes_and_bad_head_fail_closed(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 5)
    log = the_log(tmp_path)
    full = log.read_bytes()
    for cut in (1, len(full) // 2, len(full) - 1):
        log.write_bytes(full[:cut])
        with pytest.raises(CorruptState):
            await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    log.write_bytes(full)
    head = key_dir(tmp_path) / "head"
    good = head.read_bytes()
    for bad in (b"", good[:-1], good[:20], b"{}", good[:-1] + bytes([good[-1] ^ 1])):
        head.write_bytes(bad)
        with pytest.raises(CorruptState):
            await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    head.write_bytes(good)
    log.unlink()
    with pytest.raises(CorruptState):
        await LocalJsonFileStore(tmp_path).get_versioned("u", "s")


async def test_loads_read_only_the_new_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = LocalJsonFileStore(tmp_path), LocalJsonFileStore(tmp_path)
    await grow(writer, 4000, "h")
    reads: list[int] = []
    real = posixio.pread_exact

    def counting(fd: int, length: int, offset: int) -> bytes:
        reads.append(length)
        return real(fd, length, offset)

    monkeypatch.setattr(posixio, "pread_exact", counting)
    assert len(await texts(reader)) == 4000  # cold: one read of the whole record file
    start = decode_head_bytes((key_dir(tmp_path) / "head").read_bytes(), "t").start
    assert len(reads) == 1 and reads[0] == the_log(tmp_path).stat().st_size - start
    reads.clear()
    assert len(await texts(reader)) == 4000  # unchanged: the head only
    assert reads == []
    await grow(writer, 4, "new")  # another instance (could be another process) appends
    reads.clear()
    got = await texts(reader)
    assert got[-4:] == ["new0", "new1", "new2", "new3"] and len(got) == 4004
    assert len(reads) == 1 and reads[0] < 1000  # only the four new records
    reads.clear()
    await grow(reader, 4, "own")  # its own append keeps its cache warm
    assert (await texts(reader))[-1] == "own3" and reads == []


async def test_other_keys_share_the_slot_directory(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    await store.save_if_version("u", "s", AgentState("s", "u"), 0)
    await store.save_if_version("u", "s", AgentState("s", "u", "o"), 0, key="observations")
    slot = tmp_path.joinpath(*slot_parts("u", "s"))
    assert {p.name for p in slot.iterdir()} == {".lock", "agent_state", "observations"}


async def test_stale_temp_files_are_swept(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 2)
    kdir = key_dir(tmp_path)
    old, young = kdir / ".tmp.1.dead", kdir / ".tmp.2.live"
    old.write_bytes(b"partial")
    young.write_bytes(b"in flight")
    orphan = kdir / "hdeadbeefdeadbeef.log"  # a rewrite that crashed before its head
    orphan.write_bytes(b"x")
    past = time.time() - 3600
    os.utime(old, (past, past))
    os.utime(orphan, (past, past))
    assert await store.sweep(older_than=600) == 2
    assert not old.exists() and not orphan.exists() and young.exists()
    os.utime(young, (past, past))
    slot = tmp_path.joinpath(*slot_parts("u", "s"))
    fence_tmp = slot / ".tmp.3.dead"
    fence_tmp.write_bytes(b"partial fence")
    os.utime(fence_tmp, (past, past))
    other = LocalJsonFileStore(tmp_path, sweep_after=600)
    await other.get_versioned("u", "s")
    assert young.exists()  # loads never sweep (no lock held)
    await grow(other, 1, "x")  # the first save of this slot by an instance sweeps it
    assert not young.exists() and not fence_tmp.exists()
    assert await texts(store) == ["m0", "m1", "x0"]


async def test_listing_reads_no_payload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalJsonFileStore(tmp_path)
    for i in range(5):
        await store.save_if_version("u", f"s{i}", AgentState(f"s{i}", "u"), 0)

    def forbidden(*args: object) -> bytes:
        raise AssertionError("listing read a file")

    monkeypatch.setattr(posixio, "read_file", forbidden)
    monkeypatch.setattr(posixio, "pread_exact", forbidden)
    page = await store.list_session_ids("u", limit=2)
    assert page.session_ids == ("s0", "s1") and page.next_cursor == "s1"
    page = await store.list_session_ids("u", limit=2, cursor="s3")
    assert page.session_ids == ("s4",) and page.next_cursor is None


async def test_a_crashed_first_save_is_not_listed(tmp_path: Path) -> None:
    store = LocalJsonFileStore(tmp_path)
    slot = tmp_path.joinpath(*slot_parts("u", "ghost"), "agent_state")
    slot.mkdir(parents=True)  # directories created, head never committed
    assert (await store.list_session_ids("u")).session_ids == ()
    assert not await store.exists("u", "ghost")
    assert await store.save_if_version("u", "ghost", AgentState("ghost", "u"), 0) == 1
    assert (await store.list_session_ids("u")).session_ids == ("ghost",)


async def test_multi_writer_refused_on_network_filesystems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookagent.errors import StoreConfigurationError
    from hookagent_store_jsonfile import localcore

    monkeypatch.setattr(localcore, "fs_type", lambda path: "nfs4")
    with pytest.raises(StoreConfigurationError, match="nfs4"):
        await LocalJsonFileStore(tmp_path / "a").get_versioned("u", "s")
    single = LocalJsonFileStore(tmp_path / "b", writers="single")
    assert await single.save_if_version("u", "s", AgentState("s", "u"), 0) == 1
    assert not single._core.local_disk  # saves on a network filesystem stay in workers


async def test_every_tear_recovers_and_every_flip_fails_closed(tmp_path: Path) -> None:
    """G3 on the record file: a tear at every byte of an uncommitted commit frame recovers the
    committed prefix; a flipped bit at every byte of the last committed frame is refused."""
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    log = the_log(tmp_path)
    committed = log.read_bytes()
    # the bytes a writer would append for one more message, never committed (torn)
    tail = encode_commit([encode_msg(Msg.user("m3"))], encode_head(AgentState("s", "u")), 2, 4)
    for cut in range(len(tail)):
        log.write_bytes(committed + tail[:cut])
        assert await texts(LocalJsonFileStore(tmp_path, cache_slots=0)) == ["m0", "m1", "m2"], cut
    log.write_bytes(committed + tail)  # complete: a writer killed between write and fsync
    assert await texts(LocalJsonFileStore(tmp_path, cache_slots=0)) == ["m0", "m1", "m2", "m3"]
    log.write_bytes(committed + tail[: len(tail) // 2])
    await grow(store, 1, "after")  # the next writer truncates the torn tail and appends
    assert await texts(LocalJsonFileStore(tmp_path)) == ["m0", "m1", "m2", "after0"]
    data = log.read_bytes()
    last_start = len(committed)  # the record "after0" is the last committed one
    for offset in range(last_start, len(data)):
        flipped = bytearray(data)
        flipped[offset] ^= 0x01
        log.write_bytes(bytes(flipped))
        with pytest.raises(CorruptState):
            await LocalJsonFileStore(tmp_path, cache_slots=0).get_versioned("u", "s")
    log.write_bytes(data)
    assert await texts(LocalJsonFileStore(tmp_path)) == ["m0", "m1", "m2", "after0"]


def _uncommitted(variant: str) -> bytes:
    """What a power loss can leave after the last commit: nothing of it acknowledged."""
    frame3 = encode_commit([encode_msg(Msg.user("m3"))], encode_head(AgentState("s", "u")), 3, 5)
    bad_crc = bytearray(frame3)
    bad_crc[-2] ^= 0x01
    bad_magic = b"XXXX" + frame3[4:]
    return {
        "zeros10": b"\0" * 10,
        "zeros4096": b"\0" * 4096,
        "bad_crc_frame": bytes(bad_crc),
        "bad_magic_frame": bad_magic,
        "torn_then_zeros": frame3[:40] + b"\0" * 500,
        "zeroed_header": b"\0" * 32 + frame3[32:],
    }[variant]


@pytest.mark.parametrize(
    "variant",
    [
        "zeros10",
        "zeros4096",
        "bad_crc_frame",
        "bad_magic_frame",
        "torn_then_zeros",
        "zeroed_header",
    ],
)
@pytest.mark.parametrize("hint", ["kept", "missing"])
async def test_garbage_beyond_the_acknowledged_end_is_an_uncommitted_tail(
    tmp_path: Path, variant: str, hint: str
) -> None:
    """Zero-filled blocks or a damaged last frame after the last commit (a power loss during a
    write that never returned) are ignored by readers and truncated by the next writer."""
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    await grow(store, 1, "a")  # an append: the hint records where it ends
    log = the_log(tmp_path)
    committed = log.read_bytes()
    garbage = _uncommitted(variant)
    log.write_bytes(committed + garbage)
    if hint == "missing":
        (key_dir(tmp_path) / ".end").unlink()
    for reader in (store, LocalJsonFileStore(tmp_path, cache_slots=0)):
        assert await texts(reader) == ["m0", "m1", "m2", "a0"]
    assert log.read_bytes() == committed + garbage  # readers never cut anything
    await grow(LocalJsonFileStore(tmp_path), 1, "next")
    data = log.read_bytes()
    assert data.startswith(committed) and b"\0" * 10 not in data[len(committed) :]
    assert await texts(LocalJsonFileStore(tmp_path)) == ["m0", "m1", "m2", "a0", "next0"]
    # zeros are a clean tear; the rest holds a complete-length frame whose checksum fails (a
    # tear zero-filled past the frame's length cannot be told from damage): kept in a copy
    kept = [p for p in key_dir(tmp_path).iterdir() if p.name.startswith(".torn.")]
    if variant.startswith("zeros"):
        assert kept == []
    else:
        assert [p.read_bytes() for p in kept] == [garbage]


@pytest.mark.parametrize("variant", ["zeros", "flip", "bad_magic"])
async def test_damage_before_the_acknowledged_end_fails_closed(
    tmp_path: Path, variant: str
) -> None:
    """The same damage inside the last acknowledged commit (the hint covers it) is refused."""
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    base = the_log(tmp_path).stat().st_size
    await grow(store, 1, "a")
    log = the_log(tmp_path)
    data = bytearray(log.read_bytes())
    if variant == "zeros":
        data[base:] = b"\0" * (len(data) - base)
    elif variant == "flip":
        data[-2] ^= 0x01
    else:
        data[base : base + 4] = b"XXXX"
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptState, match="acknowledged"):
        await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    with pytest.raises(CorruptState, match="acknowledged"):
        await grow(LocalJsonFileStore(tmp_path), 1, "c")
    assert log.read_bytes() == bytes(data)  # the writer did not truncate or append


@pytest.mark.parametrize("variant", ["zeros", "flip", "bad_magic"])
@pytest.mark.parametrize("hint", ["stale", "missing"])
async def test_damage_followed_by_a_frame_fails_closed(
    tmp_path: Path, variant: str, hint: str
) -> None:
    """Unparsable bytes with a frame after them are no torn end, even beyond the hint (which
    a power loss can leave behind the file): fail closed, truncate nothing."""
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    await grow(store, 1, "a")
    log, end = the_log(tmp_path), key_dir(tmp_path) / ".end"
    first, stale = log.stat().st_size, end.read_bytes()
    await grow(store, 1, "b")
    second = log.stat().st_size
    await grow(store, 1, "c")
    if hint == "stale":
        end.write_bytes(stale)  # the hint after "a": "b" and "c" lie beyond it
    else:
        end.unlink()
    data = bytearray(log.read_bytes())
    if variant == "zeros":
        data[first:second] = b"\0" * (second - first)
    elif variant == "flip":
        data[second - 2] ^= 0x01
    else:
        data[first : first + 4] = b"XXXX"
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptState, match="a frame follows"):
        await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    with pytest.raises(CorruptState, match="a frame follows"):
        await grow(LocalJsonFileStore(tmp_path), 1, "d")
    assert log.read_bytes() == bytes(data)


async def test_a_flip_anywhere_in_an_unacknowledged_last_frame_is_a_tail(tmp_path: Path) -> None:
    """Beyond the hint, a complete last frame with a flipped bit (a power loss mid-write) is
    dropped like a torn one; the committed state before it is read."""
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    await grow(store, 1, "a")
    log = the_log(tmp_path)
    committed = log.read_bytes()
    frame3 = encode_commit([encode_msg(Msg.user("m3"))], encode_head(AgentState("s", "u")), 3, 5)
    for offset in range(len(frame3)):
        flipped = bytearray(frame3)
        flipped[offset] ^= 0x01
        log.write_bytes(committed + bytes(flipped))
        got = await LocalJsonFileStore(tmp_path, cache_slots=0).get_versioned("u", "s")
        assert got.version == 2, offset


async def test_save_work_does_not_grow_with_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append of 4 messages writes the same bytes and fsyncs at 4 and at 4,000 messages."""
    store = LocalJsonFileStore(tmp_path)
    small = AgentState("small", "u")
    small.context.extend(Msg.user(f"h{i:04d}") for i in range(4))
    await store.save_if_version("u", "small", small, 0)
    big = AgentState("big", "u")
    big.context.extend(Msg.user(f"h{i:04d}") for i in range(4000))
    await store.save_if_version("u", "big", big, 0)
    written: list[int] = []
    fsyncs: list[int] = []
    real_write, real_fsync = posixio.write_all, os.fsync

    def count_write(fd: int, data: bytes, offset: int | None = None) -> None:
        written.append(len(data))
        real_write(fd, data, offset)

    def count_fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    async def append_four(session: str) -> tuple[int, int]:
        got = await store.get_versioned("u", session)
        assert got.state is not None
        got.state.context.extend(Msg.user(f"n{i:04d}") for i in range(4))
        written.clear()
        fsyncs.clear()
        await store.save_if_version("u", session, got.state, got.version)
        return sum(written), len(fsyncs)

    monkeypatch.setattr(posixio, "write_all", count_write)
    monkeypatch.setattr(os, "fsync", count_fsync)
    log_small = the_log_of(tmp_path, "small").stat().st_ino
    small_bytes, small_fsyncs = await append_four("small")
    big_bytes, big_fsyncs = await append_four("big")
    assert the_log_of(tmp_path, "small").stat().st_ino == log_small  # appended, not rewritten
    assert small_fsyncs == big_fsyncs == 1  # the commit frame (the head file is untouched)
    assert big_bytes - small_bytes < 64  # the frame's version and count are fixed-width


def test_compressed_records_round_trip_and_refuse_bombs() -> None:
    from hookagent.codec import MAX_MESSAGE_BYTES
    from hookagent_store_jsonfile.records import decode_payloads, pack, unframe

    long_msg = encode_msg(Msg.user("word " * 200))
    short_msg = encode_msg(Msg.user("hi"))
    assert pack(long_msg)[:1] == b"\x78" and len(pack(long_msg)) < len(long_msg)
    assert pack(b'{"role":"user"}') == b'{"role":"user"}'  # too short to be worth it
    stored = unframe(frame([long_msg, short_msg]), 2, "t")
    assert [m.text for m in decode_payloads(stored, "t")] == ["word " * 200, "hi"]
    bomb = zlib.compress(b"{" + b" " * (MAX_MESSAGE_BYTES + 10))
    with pytest.raises(CorruptState, match="oversized"):
        decode_payloads([bomb], "t")
    with pytest.raises(CorruptState, match="trailing"):
        decode_payloads([pack(long_msg) + b"junk"], "t")
    with pytest.raises(CorruptState, match="inflate"):
        decode_payloads([b"\x78\x9c garbage"], "t")


async def test_an_unchanged_state_head_is_not_stored_again(tmp_path: Path) -> None:
    from hookagent_store_jsonfile.frames import read_frame

    store = LocalJsonFileStore(tmp_path)
    await grow(store, 2)
    size = the_log(tmp_path).stat().st_size
    await grow(store, 1, "same")  # the state head did not change
    got = await store.get_versioned("u", "s")
    assert got.state is not None
    got.state.summary = "changed"
    got.state.context.append(Msg.user("x"))
    await store.save_if_version("u", "s", got.state, got.version)
    await grow(store, 1, "again")  # unchanged again: still "changed"
    data = memoryview(the_log(tmp_path).read_bytes())
    states = []
    pos = size
    while pos < len(data):
        frame = read_frame(data, pos, "t")
        assert frame is not None
        states.append(frame[3][0])
        pos = frame[0]
    assert states[0] == b"" and b'"changed"' in states[1] and states[2] == b""
    for reader in (store, LocalJsonFileStore(tmp_path)):
        got = await reader.get_versioned("u", "s")
        assert got.version == 4 and got.state is not None and got.state.summary == "changed"
        assert [m.text for m in got.state.context] == ["m0", "m1", "same0", "x", "again0"]


async def test_zlib_frames_of_the_first_format2_writers_are_read(tmp_path: Path) -> None:
    """Frames written between 285d4ad and d6d85a1 held zlib streams (magic ``HAJF``)."""
    import struct

    from hookagent_store_jsonfile.frames import ZLIB_MAGIC

    def zlib_frame(parts: list[bytes], version: int, count: int) -> bytes:
        raw = b"\n".join(parts)
        body = zlib.compress(raw, 6)
        fixed = struct.pack(
            ">4sIIIQI", ZLIB_MAGIC, len(body), len(raw), zlib.crc32(body), version, count
        )
        return fixed + struct.pack(">I", zlib.crc32(fixed)) + body

    store = LocalJsonFileStore(tmp_path)
    await grow(store, 2)
    msgs = [encode_msg(Msg.user(f"zlib {i} " * 20)) for i in range(3)]
    with open(the_log(tmp_path), "ab") as fh:
        fh.write(zlib_frame([encode_head(AgentState("s", "u", "zsum")), *msgs], 2, 5))
    got = await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    assert got.version == 2 and got.state is not None and got.state.summary == "zsum"
    assert [m.text for m in got.state.context][2:] == [f"zlib {i} " * 20 for i in range(3)]
    await grow(LocalJsonFileStore(tmp_path), 1, "after")  # and appends follow in raw deflate
    assert (await texts(LocalJsonFileStore(tmp_path)))[-1] == "after0"


def test_a_frame_inflates_only_to_its_declared_length() -> None:
    import struct

    from hookagent_store_jsonfile.frames import FRAME_MAGIC, FRAME_RAW_MAX, read_frame

    def frame_of(body: bytes, raw_len: int) -> memoryview:
        fixed = struct.pack(">4sIIIQI", FRAME_MAGIC, len(body), raw_len, zlib.crc32(body), 0, 1)
        return memoryview(fixed + struct.pack(">I", zlib.crc32(fixed)) + body)

    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = deflater.compress(b"{" + b" " * (50 << 20)) + deflater.flush()  # 50 MiB of spaces
    with pytest.raises(CorruptState, match="wrong length"):
        read_frame(frame_of(bomb, 1000 + len(bomb)), 0, "t")
    with pytest.raises(CorruptState, match="bad lengths"):
        read_frame(frame_of(bomb, FRAME_RAW_MAX + 1), 0, "t")


async def test_small_commits_are_compacted_into_big_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookagent_store_jsonfile import localcore

    monkeypatch.setattr(localcore, "COMPACT_MIN", 2048)
    store, reader = LocalJsonFileStore(tmp_path), LocalJsonFileStore(tmp_path)
    await grow(store, 4, "base")
    gens = {the_log(tmp_path).name}
    expected = [f"base{i}" for i in range(4)]
    for turn in range(60):
        await grow(store, 2, f"t{turn}-")
        expected += [f"t{turn}-0", f"t{turn}-1"]
        gens.add(the_log(tmp_path).name)
        if turn % 7 == 0:
            assert await texts(reader) == expected  # a reader caching across compactions
    assert len(gens) > 2  # compacted more than once, each time into a new generation
    log = the_log(tmp_path)
    head = decode_head_bytes((key_dir(tmp_path) / "head").read_bytes(), "t")
    assert head.size <= log.stat().st_size and head.version > 1
    got = await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    assert got.version == 61 and got.state is not None
    assert [m.text for m in got.state.context] == expected
    assert await texts(store) == await texts(reader) == expected


@pytest.mark.parametrize("cut", ["inside_last", "previous_commit", "base"])
async def test_cutting_off_acknowledged_commits_fails_closed(tmp_path: Path, cut: str) -> None:
    """The ``.end`` hint (written after each append's fsync) tells a file cut short after
    its head's base from a torn write: acknowledged commits that are gone fail closed."""
    store = LocalJsonFileStore(tmp_path)
    await grow(store, 3)
    log = the_log(tmp_path)
    base = log.stat().st_size
    await grow(store, 1, "a")
    previous = log.stat().st_size
    await grow(store, 1, "b")
    full = log.read_bytes()
    at = {"inside_last": len(full) - 3, "previous_commit": previous, "base": base}[cut]
    log.write_bytes(full[:at])
    with pytest.raises(CorruptState, match=r"shorter|missing"):
        await LocalJsonFileStore(tmp_path).get_versioned("u", "s")
    with pytest.raises(CorruptState):  # a writer refuses too, and does not write over it
        await grow(LocalJsonFileStore(tmp_path), 1, "c")
    assert log.read_bytes() == full[:at]
    log.write_bytes(full)
    assert await texts(LocalJsonFileStore(tmp_path)) == ["m0", "m1", "m2", "a0", "b0"]


async def test_sweep_skips_a_slot_whose_writer_is_in_flight(tmp_path: Path) -> None:
    """A compaction's new generation file exists before the head that names it: a sweep with
    a tiny ``older_than`` must not unlink it, so it skips a slot whose lock is held."""
    import fcntl

    store = LocalJsonFileStore(tmp_path)
    await grow(store, 2)
    fresh = key_dir(tmp_path) / "h0123456789abcdef.log"  # the writer's new generation
    lk = os.open(key_dir(tmp_path).parent / ".lock", os.O_RDWR)
    try:
        fcntl.flock(lk, fcntl.LOCK_EX)
        fresh.write_bytes(b"new generation, head not renamed yet")
        assert await store.sweep(older_than=0) == 0
        assert fresh.exists()
    finally:
        os.close(lk)
    assert await store.sweep(older_than=0) == 1  # an orphan once no writer holds the slot
    assert not fresh.exists()
    assert len(await texts(store)) == 2


def test_a_first_save_fsyncs_every_ancestor_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user directory left by a killed first save (its entry in the root never fsynced):
    the next first save under it fsyncs the root too, or a power loss could drop the slot."""
    from hookagent_store_jsonfile.localcore import LocalCore

    root = tmp_path / "r"
    root.mkdir()
    (root / id_parts("alice")[0]).mkdir(mode=0o700)
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real(fd))[1])
    core = LocalCore(root, sweep_after=None, cache_slots=0, writers="multi")
    assert core.save("alice", "s2", AgentState("s2", "alice"), 0, "agent_state", None) == 1
    assert root.stat().st_ino in synced
    assert (root / id_parts("alice")[0]).stat().st_ino in synced
