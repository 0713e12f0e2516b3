"""The session log on local disk: the blocking core (each call runs in a worker thread,
or, for an acquire that cannot wait, on the caller's).

Per session, in ``<root>/.sessionlog/<user>/<session>/``, the ``head`` file holds two 4 KiB
slots, written alternately in place (checksummed, with a write counter: the valid slot with
the higher counter is the head), and is the session's flock file. This module reads and
writes the head and decides every operation (``hookagent.sessionlog.rules``); a session's
commits are stored in one of two formats, told apart by its head: format 2 (``logsegment``:
records appended to ``head`` itself, one fdatasync a commit; every session created since)
or format 1 (``logformat1``: one file a commit, three syncs; sessions made before).

Leases are not synced. ``acquire``, ``renew`` and ``release`` write the head slot without
an fdatasync (a run's load, its heartbeat, a failed run's end): the log is on this host's
disk (``locality = "host"``), so every process that can see the lease shares this kernel's
page cache, and a process killed at any point leaves the write in it. Only a power loss (or
a kernel crash) can lose the write, and then no process of this host survives to hold or use
the lost epoch: after the reboot the head reads as the last synced one, the next acquire
takes its epoch + 1, and every commit made with a lease is itself synced with the head it
writes (its lease included). Seals stay synced (a sealed owner must never acquire again).
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
from hookagent.errors import LogCorrupt, StorageDurabilityError
from hookagent.sessionlog import CommitResult, LogEvent, LogHead, LogWriter, SessionPage
from hookagent.sessionlog.batch import Row, decode_batch, rows_after
from hookagent.sessionlog.rules import check_holds, plan_acquire, plan_commit
from hookagent.store.ids import slot_name

from . import logformat1 as f1
from . import logsegment as seg
from . import posixio as io
from .logfiles import (
    SLOT,
    decode_head_record,
    encode_head_record,
    head_doc,
    head_of,
    head_record_size,
    seal_name,
)
from .logtree import LogTree, Session

Doc = dict[str, Any]


def _datasync(dur: io.Durability, fd: int, what: str) -> None:
    """fdatasync (the head is rewritten in place: its size and blocks are settled), with
    the same poisoning as ``Durability.fsync``."""
    dur.check()
    try:
        getattr(os, "fdatasync", os.fsync)(fd)
    except OSError as exc:
        dur.poisoned = f"fdatasync of {what}: {exc}"
        raise StorageDurabilityError(
            f"fdatasync of {what} failed ({exc}); the head may not be durable, the log handle "
            "is poisoned and the write is not retried"
        ) from exc


class LocalLogCore(LogTree):
    """Blocking implementation of ``JsonFileSessionLog`` on local disk."""

    new_format = seg.FORMAT
    """The format of sessions this handle creates (tests set 1 to write main's layout)."""

    def __init__(
        self, root: Path, *, cache_slots: int, writers: str, clock: Callable[[], float]
    ) -> None:
        super().__init__(root, cache_slots=cache_slots, writers=writers)
        self.clock = clock

    # ------------------------------------------------------------------ head file

    def _read(self, ses: Session, where: str) -> Doc | None:
        raw = os.pread(ses.hd, 2 * SLOT, 0)  # (a regular file reads short only at its end)
        docs = [d for d in (_slot(ses, raw, 0), _slot(ses, raw, 1)) if d]
        if not docs:  # (never written, or its first write torn before any byte landed: zeros)
            if not raw[:SLOT].strip(b"\x00"):  # slot 0 never written: the only write was
                return None  # the first acquire, torn by a power loss (no commit depends on it)
            raise LogCorrupt(f"{where}: the head file is damaged (no slot passes its checksum)")
        doc = docs[0] if len(docs) == 1 or docs[0]["n"] > docs[1]["n"] else docs[1]
        if seg.is_v2(doc) and (ses.seen is None or ses.torn == _key(doc)):
            if seg.last_is_whole(ses, doc, where):
                ses.torn = None
            else:  # a power loss during its commit (logsegment's crash argument)
                ses.torn = _key(doc)
                doc = self._before_torn(ses, docs, doc, where)
        seen = ses.seen
        if seen is not None and seen[0] == doc["life"] and int(doc["n"]) < seen[1]:
            raise LogCorrupt(
                f"{where}: head write {seen[1]}, which this log handle saw, is gone (the head "
                f"reads as write {doc['n']}): its slot is damaged. Nothing is written over it"
            )
        ses.seen = (str(doc["life"]), int(doc["n"]))
        return doc

    def _before_torn(self, ses: Session, docs: list[Doc], doc: Doc, where: str) -> Doc:
        """The head before ``doc``, whose last record is torn: the other slot, if it is the
        head right before that record (logsegment's crash argument); else ``LogCorrupt``."""
        for other in docs:
            if (
                other is not doc
                and other["life"] == doc["life"]
                and int(other["n"]) == int(doc["n"]) - 1
                and seg.is_v2(other)
                and int(other["end"]) == int(doc["lo"])
                and seg.last_is_whole(ses, other, where)
            ):
                return other
        raise LogCorrupt(
            f"{where}: the head's last commit (at byte {doc['lo']}) is damaged and the other "
            "head slot is not the head before it. Nothing is written over it"
        )

    def _write(
        self, ses: Session, doc: Doc | None, head: LogHead, last_first: int = -1, *,
        durable: bool = True, fields: Doc | None = None,
    ) -> None:  # fmt: skip
        """Write the head into its other slot; ``durable=False`` for a lease-only change
        (acquire, renew, release: see the module's "Leases are not synced"). ``fields``:
        a format-2 commit's new ``end``/``lo``; else the head's format is kept (a new
        session's is ``new_format``)."""
        counter = 0 if doc is None else int(doc["n"])
        life = secrets.token_hex(8) if doc is None else str(doc["life"])
        lf = (0 if doc is None else int(doc["lf"])) if last_first < 0 else last_first
        stored = head_doc(head, counter=counter + 1, last_first=lf, life=life)
        if fields is not None:
            stored.update(fields)
        elif doc is None:
            if self.new_format == seg.FORMAT:
                stored.update(seg.fresh_fields())
        elif seg.is_v2(doc):
            stored.update({k: doc[k] for k in ("fmt", "end", "lo")})
        record = encode_head_record(stored)
        slot = (counter + 1) % 2
        ses.slots[slot] = None  # (until the write is whole: a failed one may be torn)
        io.write_all(ses.hd, record, slot * SLOT)
        ses.slots[slot] = (record, stored)
        if durable:
            _datasync(self.dur, ses.hd, "the session log head")
        ses.seen = (life, counter + 1)

    # ------------------------------------------------------------------ lease

    def head(self, user_id: str, session_id: str) -> LogHead:
        where = slot_name(user_id, session_id, "log")
        return self.locked(
            user_id, session_id, lambda s: head_of(self._read(s, where)),
            create=False, exclusive=False, absent=LogHead,
        )  # fmt: skip

    def acquire(self, user_id: str, session_id: str, owner: str, lease: float) -> LogWriter:
        def step(ses: Session) -> LogWriter:
            return self._acquire_step(ses, user_id, session_id, owner, lease)

        return self.locked(user_id, session_id, step, create=True, exclusive=True, absent=_never)

    def _acquire_step(
        self, ses: Session, user_id: str, session_id: str, owner: str, lease: float
    ) -> LogWriter:
        where = slot_name(user_id, session_id, "log")
        doc = self._read(ses, where)
        sealed = self._sealed(ses, doc, owner, where)
        new = plan_acquire(
            head_of(doc), user_id, session_id, owner, self.clock(), lease, sealed=sealed
        )
        self._write(ses, doc, new, durable=False)
        return LogWriter(user_id, session_id, owner, new.epoch, new.lease_until, new.seq)

    def acquire_now(
        self, user_id: str, session_id: str, owner: str, lease: float
    ) -> LogWriter | None:
        """``acquire`` on the calling thread (the event loop's) when nothing in it can wait:
        the session's fds are cached and its mutex and flock are free at once. A lease
        change is not synced ("Leases are not synced"), so that is a few non-blocking
        syscalls on the page cache, against ~40 us of CPU for a worker-thread hop. None:
        it could wait (or the session is not cached), and the caller takes a thread."""
        self.dur.check()
        with self._lock:
            if self._pid != os.getpid() or (user_id, session_id) not in self._sessions:
                return None
        ses = self._open(user_id, session_id, False)  # (cached: pinned, no I/O)
        if ses is None:
            return None
        try:
            if not ses.mutex.acquire(blocking=False):
                return None
            try:
                try:
                    fcntl.flock(ses.hd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return None
                try:
                    if os.fstat(ses.hd).st_nlink == 0:  # deleted: the locked path sorts it out
                        return None
                    return self._acquire_step(ses, user_id, session_id, owner, lease)
                finally:
                    fcntl.flock(ses.hd, fcntl.LOCK_UN)
            finally:
                ses.mutex.release()
        finally:
            self._unpin(ses)

    def renew(self, writer: LogWriter, lease: float) -> LogWriter:
        where = slot_name(writer.user_id, writer.session_id, "log")

        def step(ses: Session) -> LogWriter:
            doc = self._read(ses, where)
            head, now = head_of(doc), self.clock()
            check_holds(head, writer, now, "renew")
            self._write(ses, doc, attrs.evolve(head, lease_until=now + lease), durable=False)
            return attrs.evolve(writer, lease_until=now + lease)

        def absent() -> LogWriter:
            check_holds(LogHead(), writer, self.clock(), "renew")
            raise AssertionError("unreachable: an absent log holds no lease")

        return self.locked(
            writer.user_id, writer.session_id, step, create=False, exclusive=True, absent=absent
        )

    def release(self, writer: LogWriter) -> bool:
        where = slot_name(writer.user_id, writer.session_id, "log")

        def step(ses: Session) -> bool:
            doc = self._read(ses, where)
            head = head_of(doc)
            if head.epoch != writer.epoch or head.owner != writer.owner:
                return False
            self._write(ses, doc, attrs.evolve(head, owner=None, lease_until=0.0), durable=False)
            return True

        return self.locked(
            writer.user_id, writer.session_id, step,
            create=False, exclusive=True, absent=lambda: False,
        )  # fmt: skip

    def seal(self, user_id: str, session_id: str, owner: str) -> None:
        where = slot_name(user_id, session_id, "log")

        def step(ses: Session) -> None:
            doc = self._read(ses, where)
            if f1.mark_sealed(ses, owner):
                self.dur.fsync(ses.sd, "the session log directory (seal)")
            head = head_of(doc)
            if head.owner == owner:  # (the marker is durable first: never unsealed by a crash)
                self._write(ses, doc, attrs.evolve(head, owner=None, lease_until=0.0))

        self.locked(user_id, session_id, step, create=True, exclusive=True, absent=_never)

    def _sealed(self, ses: Session, doc: Doc | None, owner: str, where: str) -> bool:
        """A seal marker (``seal``), or in format 2 a finished run's record naming it."""
        if _exists(ses.sd, seal_name(owner)):
            return True
        return seg.is_v2(doc) and owner in seg.index(ses, doc, where).sealed  # type: ignore[arg-type]

    def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool:
        where = slot_name(user_id, session_id, "log")
        return self.locked(
            user_id, session_id, lambda s: self._sealed(s, self._read(s, where), owner, where),
            create=False, exclusive=False, absent=lambda: False,
        )  # fmt: skip

    # ------------------------------------------------------------------ commit

    def commit(
        self,
        writer: LogWriter,
        batch_id: str,
        expected_seq: int,
        events: Sequence[LogEvent],
        data: bytes,
        digest: str,
        finish: bool,
    ) -> CommitResult:
        where = slot_name(writer.user_id, writer.session_id, "log")

        def decide(head: LogHead, prior: tuple[int, int, str] | None) -> Any:
            return plan_commit(
                head, writer, batch_id, expected_seq, events, data, digest, self.clock(),
                prior=prior, finish=finish,
            )  # fmt: skip

        def step2(ses: Session, doc: Doc) -> CommitResult:
            idx = seg.index(ses, doc, where)
            known = idx.batches.get(batch_id)
            prior = None
            if known is not None:  # its record whole before it decides anything
                seg.record_at(ses, known[3], seg.record_end(idx, known[3]), where)
                prior = known[:3]
            plan = decide(head_of(doc), prior)
            if plan.result is not None:
                return plan.result  # type: ignore[no-any-return]
            record = seg.encode_record(
                plan.first_seq, plan.last_seq, batch_id, digest, data, plan.seal
            )
            fields = seg.append(ses, doc, record)
            self._write(ses, doc, plan.head, plan.first_seq, fields=fields)  # the commit point
            seg.note(
                ses, idx, plan.first_seq, plan.last_seq, batch_id, digest, plan.seal,
                int(fields["lo"]), int(fields["end"]),
            )  # fmt: skip
            return CommitResult(plan.first_seq, plan.last_seq, plan.head)

        def step(ses: Session) -> CommitResult:
            doc = self._read(ses, where)
            if seg.is_v2(doc):
                return step2(ses, doc)  # type: ignore[arg-type]
            plan = decide(head_of(doc), f1.prior(ses, batch_id, where))
            if plan.result is not None:
                return plan.result  # type: ignore[no-any-return]
            f1.write_commit(
                self.dur, ses, plan.first_seq, plan.last_seq, batch_id, digest, data, plan.seal
            )  # the commit durable
            self._write(ses, doc, plan.head, plan.first_seq)  # the commit point
            f1.noted(ses, doc, plan.first_seq)
            return CommitResult(plan.first_seq, plan.last_seq, plan.head)

        def absent() -> CommitResult:
            decide(LogHead(), None)  # raises LogFenced: no lease on a log never written
            raise AssertionError("unreachable: an absent log holds no lease")

        return self.locked(
            writer.user_id, writer.session_id, step, create=False, exclusive=True, absent=absent
        )

    # ------------------------------------------------------------------ reads

    def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None
    ) -> list[LogEvent]:
        where = slot_name(user_id, session_id, "log")

        def step(ses: Session) -> list[LogEvent]:
            doc = self._read(ses, where)
            head = 0 if doc is None else int(doc["seq"])
            if doc is None or head <= seq:
                return []
            chunk = 256 if limit is None else min(limit, 256)  # a commit holds >= 1 event
            commits = _commits(ses, doc, seq, head, where, chunk)
            return _events(commits, seq, head, limit, where)

        return self.locked(user_id, session_id, step, create=False, exclusive=False, absent=list)

    def read_rows(self, user_id: str, session_id: str, seq: int) -> list[Row]:
        """``read_after(seq)`` as ``Row`` tuples, the same files and checks."""
        where = slot_name(user_id, session_id, "log")

        def step(ses: Session) -> list[Row]:
            doc = self._read(ses, where)
            head = 0 if doc is None else int(doc["seq"])
            if doc is None or head <= seq:
                return []
            return rows_after(_commits(ses, doc, seq, head, where), seq, head, where=where)

        return self.locked(user_id, session_id, step, create=False, exclusive=False, absent=list)

    def read_commits(
        self, user_id: str, session_id: str, seqs: Sequence[int]
    ) -> tuple[int, list[tuple[int, int, bytes] | None]]:
        """(head seq, per seq the record holding ``seq + 1`` or None): ``read_after(seq, 1)``
        undecoded for each, under one lock, the same record and crc checks."""
        where = slot_name(user_id, session_id, "log")

        def step(ses: Session) -> tuple[int, list[tuple[int, int, bytes] | None]]:
            doc = self._read(ses, where)
            head = 0 if doc is None else int(doc["seq"])
            out: list[tuple[int, int, bytes] | None] = []
            for seq in seqs:
                if doc is None or head <= seq:
                    out.append(None)
                else:
                    out.append(next(iter(_commits(ses, doc, seq, head, where, 1)), None))
            return head, out

        def absent() -> tuple[int, list[tuple[int, int, bytes] | None]]:
            return 0, [None] * len(seqs)

        return self.locked(user_id, session_id, step, create=False, exclusive=False, absent=absent)

    def has_log(self, user_id: str, session_id: str) -> bool:
        """Whether the session's head has a commit (for listing)."""
        where = slot_name(user_id, session_id, "log")
        return self.locked(
            user_id, session_id, lambda s: int((self._read(s, where) or {"seq": 0})["seq"]) > 0,
            create=False, exclusive=False, absent=lambda: False,
        )  # fmt: skip

    def list_page(self, user_id: str, limit: int, cursor: str | None) -> SessionPage:
        ids: list[str] = []
        for sid, _ in self.session_ids(user_id):
            if cursor and sid <= cursor:
                continue
            if not self.has_log(user_id, sid):
                continue
            if len(ids) == limit:
                return SessionPage(tuple(ids), ids[-1])
            ids.append(sid)
        return SessionPage(tuple(ids), None)

    def delete(self, user_id: str, session_id: str) -> bool:
        def step(ses: Session) -> bool:
            self.remove_session(user_id, session_id, ses)
            return True

        return self.locked(
            user_id, session_id, step, create=False, exclusive=True, absent=lambda: False
        )


def _events(
    commits: Iterable[tuple[int, int, bytes]], seq: int, head: int, limit: int | None, where: str
) -> list[LogEvent]:
    """``read_after``'s events from (first, last, bytes) commits, with its checks."""
    out: list[LogEvent] = []
    expect, started = seq + 1, False
    for first, last, data in commits:
        if first > head:
            break  # (an orphan is never indexed; a planted head may sit below a record)
        if not started:
            expect, started = min(expect, first), True
        if first != expect:
            raise LogCorrupt(f"{where}: seqs {expect}..{first - 1} are missing")
        events = decode_batch(data, first, where=where)
        if first + len(events) - 1 != last:
            raise LogCorrupt(f"{where}: the commit at seq {first} does not match its record")
        expect = last + 1
        for e in events:
            if seq < e.seq <= head:
                out.append(e)
                if limit is not None and len(out) >= limit:
                    return out
    if head > seq and (not out or out[-1].seq != head):
        raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
    return out


def _commits(
    ses: Session, doc: Doc, seq: int, head: int, where: str, chunk: int = 256
) -> Iterable[tuple[int, int, bytes]]:
    """The session's commits from the one holding ``seq + 1``, in its format (``chunk``:
    records a pread; a point read, ``read_after(seq, 1)``, reads one)."""
    if seg.is_v2(doc):
        return seg.commits(ses, doc, seq, where, chunk)
    return f1.commits(ses, doc, seq, head, where)


def _slot(ses: Session, raw: bytes, i: int) -> Doc | None:
    """The head in slot ``i`` of the head file's bytes ``raw``. A head record is decoded
    once: a slot that still starts with the bytes this handle last decoded or wrote there
    is the same record, so the same head (``decode_head_record`` reads nothing past the
    record); its crc and fields were checked when it was decoded or built."""
    known = ses.slots[i]
    if known is not None and raw.startswith(known[0], i * SLOT):
        return known[1]  # type: ignore[no-any-return]
    part = raw[i * SLOT : (i + 1) * SLOT]
    doc = decode_head_record(part)
    ses.slots[i] = None if doc is None else (part[: head_record_size(part)], doc)
    return doc


def _key(doc: Doc) -> tuple[Any, ...]:
    return (doc["life"], doc["n"], doc["lo"], doc["end"])


def _never() -> NoReturn:
    raise AssertionError("unreachable: the session is created")


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
