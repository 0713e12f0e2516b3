"""The local session log's own promises: what a warm commit costs, what reads touch, torn and
damaged heads, disk-full and fsync failures, a planted symlink, and a state store sharing
the root."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import (
    CorruptState,
    LogCorrupt,
    StorageDurabilityError,
    StorageFull,
)
from hookagent.messages import Msg
from hookagent.sessionlog import LogEvent
from hookagent.state import AgentState
from hookagent_store_jsonfile import JsonFileSessionLog, LocalJsonFileStore, posixio
from hookagent_store_jsonfile.layout import id_parts
from hookagent_store_jsonfile.logfiles import (
    COMMIT_MAGIC,
    LOG_DIR,
    SLOT,
    commit_name,
    decode_head_record,
)

pytestmark = pytest.mark.anyio
U, S = "u:1", "s/1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sdir(root: Path) -> Path:
    return root / LOG_DIR / Path(*id_parts(U), *id_parts(S))


def ev(n: int, kind: str = "message/appended") -> list[LogEvent]:
    return [LogEvent(kind, {"n": n, "i": i}) for i in range(2)]


def v1(log: JsonFileSessionLog) -> JsonFileSessionLog:
    """A handle creating sessions in format 1 (main's layout: one file per commit)."""
    log._core.new_format = 1
    return log


async def filled(log: JsonFileSessionLog, commits: int) -> Any:
    w = await log.acquire(U, S, "run-1", 60)
    for i in range(commits):
        await log.commit(w, f"b{i}", 2 * i, ev(i))
    return w


async def test_a_warm_commit_is_one_file_two_fsyncs_and_a_datasync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = v1(JsonFileSessionLog(tmp_path))  # main's layout: a file per commit
    w = await filled(log, 3)
    calls: list[str] = []
    real = {name: getattr(os, name) for name in ("fsync", "fdatasync", "open", "rename")}

    def counted(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real[name](*args, **kwargs)

        return call

    for name in real:
        monkeypatch.setattr(os, name, counted(name))
    await log.commit(w, "warm", 6, ev(9))
    assert sorted(calls) == ["fdatasync", "fsync", "fsync", "open", "open"], calls
    # the opens: the batch index lookup (absent) and the new commit file
    monkeypatch.undo()
    names = sorted(os.listdir(sdir(tmp_path)))
    assert [n for n in names if n.startswith("c")] == [commit_name(f) for f in (1, 3, 5, 7)]
    assert os.path.getsize(sdir(tmp_path) / "head") <= 2 * SLOT
    await log.aclose()


async def test_lease_changes_are_not_synced_seals_and_commits_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """acquire, renew and release write the head in place with no sync (loglocal's
    "Leases are not synced": only a power loss loses them, and no writer survives it); a
    seal and a commit are durable when they return."""
    log = JsonFileSessionLog(tmp_path)
    await filled(log, 1)  # the session's directory and head exist (their creation is synced)
    await log.release(await log.acquire(U, S, "run-1", 60))
    syncs: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda fd, _n=name, _r=real: (syncs.append(_n), _r(fd))[1])
    w = await log.acquire(U, S, "run-2", 60)
    w = await log.renew(w, 60)
    assert await log.release(w)
    w = await log.acquire(U, S, "run-3", 60)
    assert syncs == [], syncs
    await log.commit(w, "c", 2, ev(5))
    assert syncs == ["fdatasync"], syncs  # format 2: the record and the head, one sync
    syncs.clear()
    await log.seal(U, S, "run-9")
    assert syncs, "a seal is durable when it returns"
    monkeypatch.undo()
    other = JsonFileSessionLog(tmp_path)  # what another process reads: the page cache
    head = await other.head(U, S)
    assert (head.seq, head.owner, head.epoch) == (4, "run-3", w.epoch)
    assert await other.is_sealed(U, S, "run-9")
    await other.aclose()
    await log.aclose()


async def test_read_after_reads_only_the_commits_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = v1(JsonFileSessionLog(tmp_path))  # main's layout: a file per commit
    await filled(log, 50)
    fresh = JsonFileSessionLog(tmp_path)  # nothing cached: one listing of names
    read: list[str] = []
    real = posixio.read_file

    def spy(dir_fd: int, name: str, where: str = "") -> bytes | None:
        read.append(name)
        return real(dir_fd, name, where)

    monkeypatch.setattr(posixio, "read_file", spy)
    got = await fresh.read_after(U, S, 96)
    assert [e.seq for e in got] == [97, 98, 99, 100]
    assert read == [commit_name(97), commit_name(99)]
    read.clear()
    assert [e.seq for e in await fresh.read_after(U, S, 9, limit=3)] == [10, 11, 12]
    assert read == [commit_name(9), commit_name(11)]
    await log.aclose()
    await fresh.aclose()


async def test_a_torn_head_slot_is_the_previous_head(tmp_path: Path) -> None:
    """A power loss mid-write of the head tears the slot being written: the other slot, the
    previous head, is the head; the commit it would have published is an orphan."""
    log = v1(JsonFileSessionLog(tmp_path))  # main's layout: a file per commit
    w = await filled(log, 2)
    before = await log.head(U, S)
    await log.commit(w, "last", 4, ev(7))
    await log.aclose()
    head = sdir(tmp_path) / "head"
    raw = head.read_bytes()
    docs = [decode_head_record(raw[:SLOT]), decode_head_record(raw[SLOT:])]
    assert docs[0] is not None and docs[1] is not None
    newest = max((0, 1), key=lambda i: docs[i]["n"])  # type: ignore[index]
    torn = bytearray(raw)
    torn[newest * SLOT + 20 : (newest + 1) * SLOT] = b"\x00" * (SLOT - 20)
    head.write_bytes(bytes(torn[: 2 * SLOT]))
    other = JsonFileSessionLog(tmp_path)
    assert await other.head(U, S) == before
    assert [e.seq for e in await other.read_after(U, S, 0)] == [1, 2, 3, 4]
    assert (sdir(tmp_path) / commit_name(5)).exists()  # the orphan, never read
    w2 = await other.acquire(U, S, "run-1", 60)
    r = await other.commit(w2, "again", 4, ev(8))
    assert (r.first_seq, r.last_seq, r.duplicate) == (5, 6, False)
    assert [e.payload["n"] for e in await other.read_after(U, S, 4)] == [8, 8]
    again = await other.commit(w2, "last", 6, ev(7))  # the orphan's batch was never a commit
    assert (again.first_seq, again.duplicate) == (7, False)
    await other.aclose()


async def test_a_damaged_head_this_handle_saw_fails_closed(tmp_path: Path) -> None:
    log = JsonFileSessionLog(tmp_path)
    w = await filled(log, 2)
    await log.commit(w, "last", 4, ev(7))
    head = sdir(tmp_path) / "head"
    raw = bytearray(head.read_bytes())
    for slot in (0, 1):  # damage whichever slot holds the newest head
        trial = bytearray(raw)
        trial[slot * SLOT + 30] ^= 0xFF
        head.write_bytes(bytes(trial))
        try:
            seq = (await log.head(U, S)).seq
        except LogCorrupt as exc:
            assert "which this log handle saw, is gone" in str(exc)
            with pytest.raises(LogCorrupt):
                await log.commit(w, "more", 6, ev(9))
        else:
            assert seq == 6  # the older slot was damaged: no matter
        head.write_bytes(bytes(raw))
    both = bytearray(raw)
    both[30] ^= 0xFF
    both[SLOT + 30] ^= 0xFF
    head.write_bytes(bytes(both))
    with pytest.raises(LogCorrupt, match="no slot passes its checksum"):
        await JsonFileSessionLog(tmp_path).read_after(U, S, 0)
    await log.aclose()


async def test_a_missing_or_damaged_commit_fails_closed(tmp_path: Path) -> None:
    log = v1(JsonFileSessionLog(tmp_path))  # main's layout: a file per commit
    await filled(log, 3)
    path = sdir(tmp_path) / commit_name(3)
    data = path.read_bytes()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(LogCorrupt, match="damaged"):
        await log.read_after(U, S, 0)
    assert [e.seq for e in await log.read_after(U, S, 4)] == [5, 6]  # after it: readable
    path.unlink()
    with pytest.raises(LogCorrupt, match="missing"):
        await log.read_after(U, S, 2)
    await log.aclose()


async def test_disk_full_writes_nothing_and_the_handle_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = JsonFileSessionLog(tmp_path)
    w = await filled(log, 2)
    real = posixio.write_all

    def full(fd: int, data: bytes, offset: int | None = None) -> None:
        if data.startswith(COMMIT_MAGIC):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data, offset)

    monkeypatch.setattr(posixio, "write_all", full)
    with pytest.raises(StorageFull):
        await log.commit(w, "full", 4, ev(5))
    assert not (sdir(tmp_path) / commit_name(5)).exists()
    assert (await log.head(U, S)).seq == 4
    monkeypatch.undo()
    r = await log.commit(w, "full", 4, ev(5))
    assert (r.first_seq, r.duplicate) == (5, False)
    await log.aclose()


async def test_an_fsync_failure_poisons_the_handle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = v1(JsonFileSessionLog(tmp_path))  # main's layout: a file per commit
    w = await filled(log, 1)

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(StorageDurabilityError):
        await log.commit(w, "lost", 2, ev(2))
    monkeypatch.undo()
    with pytest.raises(StorageDurabilityError, match="poisoned"):
        await log.head(U, S)
    other = JsonFileSessionLog(tmp_path)  # a new handle: the head never moved
    assert (await other.head(U, S)).seq == 2
    assert [e.seq for e in await other.read_after(U, S, 0)] == [1, 2]
    await other.aclose()


async def test_a_planted_symlink_is_refused(tmp_path: Path) -> None:
    log = JsonFileSessionLog(tmp_path / "root")
    await filled(log, 1)
    await log.aclose()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = sdir(tmp_path / "root")
    for entry in target.iterdir():
        entry.rename(outside / entry.name)
    target.rmdir()
    target.symlink_to(outside)
    fresh = JsonFileSessionLog(tmp_path / "root")
    with pytest.raises(CorruptState, match="symlink"):
        await fresh.read_after(U, S, 0)
    with pytest.raises(CorruptState, match="symlink"):
        await fresh.acquire(U, S, "x", 10)
    await fresh.aclose()


async def test_a_state_store_on_the_same_root_never_meets_the_log(tmp_path: Path) -> None:
    log, store = JsonFileSessionLog(tmp_path), LocalJsonFileStore(tmp_path, sweep_after=0)
    await filled(log, 2)
    state = AgentState(S, U)
    state.context.append(Msg.user("hi"))
    assert await store.save_if_version(U, S, state, 0) == 1
    assert await store.save_if_version(U, "other", AgentState("other", U), 0) == 1
    assert (await store.list_session_ids(U)).session_ids == ("other", S)
    assert (await log.list_session_ids(U)).session_ids == (S,)
    await store.sweep(older_than=0)
    assert await store.delete(U, S) is True
    assert await store.delete(U, "log") is False
    assert [e.seq for e in await log.read_after(U, S, 0)] == [1, 2, 3, 4]
    assert await log.delete(U, S) is True
    assert (await store.get_versioned(U, "other")).version == 1
    await log.aclose()
    await store.aclose()


async def test_a_torn_orphan_is_no_prior_and_is_replaced(tmp_path: Path) -> None:
    """A power loss mid-commit can leave the commit file (and its index link, the same
    inode) cut short: the retry of that batch is a new commit, not an error."""
    log = v1(JsonFileSessionLog(tmp_path))  # main's layout: a file per commit
    w = await filled(log, 1)
    events = ev(5)
    log.plant_orphan(U, S, "retried", events)
    path = sdir(tmp_path) / commit_name(3)
    path.write_bytes(path.read_bytes()[:40])  # (in place: the link sees it too)
    r = await log.commit(w, "retried", 2, events)
    assert (r.first_seq, r.last_seq, r.duplicate) == (3, 4, False)
    assert [e.payload["n"] for e in await log.read_after(U, S, 2)] == [5, 5]
    again = await log.commit(w, "retried", 2, events)
    assert (again.first_seq, again.duplicate) == (3, True)
    await log.aclose()


async def test_an_index_another_process_outdated_is_listed_again(tmp_path: Path) -> None:
    """Handle A indexes the commit files, B commits twice, A commits: A's read lists the
    names again instead of trusting an index that misses B's commits."""
    a = JsonFileSessionLog(tmp_path)
    b = a.another_handle()
    await filled(a, 2)
    assert len(await a.read_after(U, S, 0)) == 4  # A's index: commits at 1, 3
    wb = await b.acquire(U, S, "run-1", 60)
    await b.commit(wb, "b-1", 4, ev(10))
    await b.commit(wb, "b-2", 6, ev(11))
    wa = await a.acquire(U, S, "run-1", 60)
    await a.commit(wa, "a-1", 8, ev(12))
    assert [e.seq for e in await a.read_after(U, S, 0)] == list(range(1, 11))
    assert [e.payload["n"] for e in await a.read_after(U, S, 4)] == [10, 10, 11, 11, 12, 12]
    await a.aclose()
    await b.aclose()


async def test_a_torn_first_acquire_is_a_log_never_written(tmp_path: Path) -> None:
    """The first head write goes to slot 1; torn by a power loss (slot 0 still a hole), the
    session is as new, not stuck failing closed: nothing but that lease depended on it."""
    log = JsonFileSessionLog(tmp_path)
    await log.acquire(U, S, "first", 60)
    await log.aclose()
    head = sdir(tmp_path) / "head"
    raw = bytearray(head.read_bytes())
    raw[SLOT + 12 :] = b"\x00" * (len(raw) - SLOT - 12)
    head.write_bytes(bytes(raw))
    fresh = JsonFileSessionLog(tmp_path)
    assert (await fresh.head(U, S)).epoch == 0
    w = await fresh.acquire(U, S, "second", 60)
    assert w.epoch == 1
    await fresh.commit(w, "b", 0, ev(1))
    assert len(await fresh.read_after(U, S, 0)) == 2
    await fresh.aclose()


# ---------------------------------------------------------------- format 2 (logsegment)


def records_of(root: Path) -> bytes:
    return (sdir(root) / "head").read_bytes()[2 * SLOT :]


async def test_a_format2_commit_is_two_writes_and_one_datasync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = JsonFileSessionLog(tmp_path)
    w = await filled(log, 3)
    calls: list[str] = []
    real = {n: getattr(os, n) for n in ("fsync", "fdatasync", "open", "link", "pwrite")}

    def counted(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real[name](*args, **kwargs)

        return call

    events = ev(9)
    for name in real:
        monkeypatch.setattr(os, name, counted(name))
    await log.commit(w, "warm", 6, events)
    assert sorted(calls) == ["fdatasync", "pwrite", "pwrite"], calls  # record, head slot
    monkeypatch.undo()
    assert [n for n in os.listdir(sdir(tmp_path)) if n != "head"] == []  # no file per commit
    fresh = JsonFileSessionLog(tmp_path)  # another process: it indexes the records once
    assert [e.payload["n"] for e in await fresh.read_after(U, S, 6)] == [9, 9]
    assert (await fresh.commit(w, "warm", 6, events)).duplicate  # the batch index is in them
    await log.aclose()
    await fresh.aclose()


async def test_a_torn_last_record_is_the_previous_head(tmp_path: Path) -> None:
    """A power loss during a commit's fdatasync can keep its head slot and lose its record:
    a handle's first read finds the record the head names torn, and the previous head (the
    other slot, ending where that record starts) is the head; the next commit writes over
    the torn bytes."""
    log = JsonFileSessionLog(tmp_path)
    w = await filled(log, 2)
    before = await log.head(U, S)
    await log.commit(w, "lost", 4, ev(7))
    await log.aclose()
    path = sdir(tmp_path) / "head"
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0xFF  # the last record's bytes did not all land
    path.write_bytes(bytes(raw))
    other = JsonFileSessionLog(tmp_path)
    assert await other.head(U, S) == before
    assert [e.seq for e in await other.read_after(U, S, 0)] == [1, 2, 3, 4]
    w2 = await other.acquire(U, S, "run-1", 60)  # (the lost commit's writer, after a reboot)
    again = await other.commit(w2, "lost", 4, ev(8))  # never committed: no prior
    assert (again.first_seq, again.last_seq, again.duplicate) == (5, 6, False)
    third = JsonFileSessionLog(tmp_path)
    assert [e.payload["n"] for e in await third.read_after(U, S, 4)] == [8, 8]
    for h in (other, third):
        await h.aclose()


async def test_a_damaged_record_under_the_head_fails_closed(tmp_path: Path) -> None:
    log = JsonFileSessionLog(tmp_path)
    await filled(log, 3)
    await log.aclose()
    path = sdir(tmp_path) / "head"
    raw = bytearray(path.read_bytes())
    first = records_of(tmp_path)
    third = first.index(COMMIT_MAGIC, first.index(COMMIT_MAGIC, 1) + 1)
    raw[2 * SLOT + third - 3] ^= 0xFF  # in the batch bytes of the second record (seqs 3..4)
    path.write_bytes(bytes(raw))
    fresh = JsonFileSessionLog(tmp_path)
    with pytest.raises(LogCorrupt, match="damaged"):
        await fresh.read_after(U, S, 0)
    with pytest.raises(LogCorrupt, match="damaged"):
        await fresh.read_rows_after(U, S, 2)
    assert [e.seq for e in await fresh.read_after(U, S, 4)] == [5, 6]  # after it: readable
    raw[-3] ^= 0xFF  # and the last one too: the other slot is not the head before it
    path.write_bytes(bytes(raw))
    with pytest.raises(LogCorrupt, match="damaged"):
        await JsonFileSessionLog(tmp_path).head(U, S)
    await fresh.aclose()


async def test_a_format1_log_is_read_and_written_in_format1(tmp_path: Path) -> None:
    """A session main's code wrote (a file per commit) keeps its layout; sessions created
    since are format 2; both on one root, through one handle."""
    old = v1(JsonFileSessionLog(tmp_path))
    w = await filled(old, 2)
    await old.commit(w, "end", 4, ev(3), finish=True)
    await old.aclose()
    log = JsonFileSessionLog(tmp_path)
    assert [e.seq for e in await log.read_after(U, S, 0)] == [1, 2, 3, 4, 5, 6]
    assert [r[0] for r in await log.read_rows_after(U, S, 3)] == [4, 5, 6]
    assert await log.is_sealed(U, S, "run-1")
    w2 = await log.acquire(U, S, "run-2", 60)
    r = await log.commit(w2, "more", 6, ev(4), finish=True)
    assert (r.first_seq, r.last_seq) == (7, 8)
    assert (sdir(tmp_path) / commit_name(7)).exists()  # format 1 still
    assert await log.is_sealed(U, S, "run-2")
    w3 = await log.acquire(U, "new", "run-1", 60)
    await log.commit(w3, "n1", 0, ev(1), finish=True)
    new_dir = tmp_path / LOG_DIR / Path(*id_parts(U), *id_parts("new"))
    assert os.listdir(new_dir) == ["head"]  # format 2: the record is in the head file
    assert await log.is_sealed(U, "new", "run-1")  # sealed by its finishing record
    assert not await log.is_sealed(U, "new", "run-2")
    with pytest.raises(Exception, match="sealed"):
        await JsonFileSessionLog(tmp_path).acquire(U, "new", "run-1", 60)
    await log.aclose()


async def test_a_log_main_wrote_reads_and_grows(tmp_path: Path) -> None:
    """``data/sessionlog-main``: a session written by main's code before format 2 (two
    commits, the second finishing run-a; copied by git, so its batch links are plain
    copies, which the format-1 reader never trusts as an index)."""
    import shutil

    shutil.copytree(Path(__file__).parent / "data" / "sessionlog-main", tmp_path / "root")
    log = JsonFileSessionLog(tmp_path / "root")
    head = await log.head("u1", "s1")
    assert (head.seq, head.commit_id, head.checkpoint_seq, head.owner) == (3, "a2", 3, None)
    events = await log.read_after("u1", "s1", 0)
    assert [(e.seq, e.event_id, e.type) for e in events] == [
        (1, "e1", "message/appended"),
        (2, "e2", "acme/note"),
        (3, "e3", "state/checkpoint"),
    ]
    assert (events[1].run_id, events[1].turn_id, events[1].required) == ("run-a", "t1", False)
    rows = await log.read_rows_after("u1", "s1", 1)
    assert [r[:3] for r in rows] == [(2, "e2", "acme/note"), (3, "e3", "state/checkpoint")]
    assert await log.is_sealed("u1", "s1", "run-a")
    w = await log.acquire("u1", "s1", "run-b", 60)
    r = await log.commit(w, "b1", 3, ev(1), finish=True)
    assert (r.first_seq, r.last_seq) == (4, 5)
    sd = tmp_path / "root" / LOG_DIR / "u1" / "s1"
    assert (sd / commit_name(4)).exists()  # it stays in its layout
    again = JsonFileSessionLog(tmp_path / "root")
    assert [e.seq for e in await again.read_after("u1", "s1", 0)] == [1, 2, 3, 4, 5]
    assert await again.is_sealed("u1", "s1", "run-b")
    await log.aclose()
    await again.aclose()


async def test_a_cached_free_session_is_acquired_without_a_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: a W1 call's acquire runs on the event loop when it cannot wait; the
    commits (each one fdatasync) keep their worker thread. Counted, not timed."""
    from hookagent import LeaseHeld
    from hookagent_store_jsonfile.local import run_blocking as real

    hops: list[str] = []

    async def counting(call: Any, mapped: Any, func: Any, *args: Any) -> Any:
        hops.append(func.__name__)
        return await real(call, mapped, func, *args)

    monkeypatch.setattr("hookagent_store_jsonfile.sessionlog.run_blocking", counting)
    log = JsonFileSessionLog(tmp_path)
    w = await log.acquire("u", "s", "run-1", 60)  # not cached yet: the thread creates it
    assert hops == ["acquire"]
    await log.commit(w, "b1", 0, [LogEvent("acme/x", {})], finish=True)
    hops.clear()
    w2 = await log.acquire("u", "s", "run-2", 60)  # cached and free: inline
    assert hops == [] and w2.epoch == w.epoch + 1 and w2.seq == 1
    with pytest.raises(LeaseHeld):  # the rules are the same inline
        await log.acquire("u", "s", "run-3", 60)
    assert hops == []
    other = log.another_handle()  # another handle (as another process) sees the lease
    with pytest.raises(LeaseHeld):
        await other.acquire("u", "s", "run-3", 60)
    await log.commit(w2, "b2", 1, [LogEvent("acme/x", {})])
    assert hops == ["acquire", "commit"]  # (the other handle's first open; the commit)
    await log.aclose()
    await other.aclose()
