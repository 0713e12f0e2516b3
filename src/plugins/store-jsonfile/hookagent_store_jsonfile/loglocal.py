"""The session log on local disk: the blocking core (each call runs in a worker thread).

Per session, in ``<root>/.sessionlog/<user>/<session>/``:

    head                     two 4 KiB slots, written alternately in place (checksummed,
                             with a write counter: the valid slot with the higher counter is
                             the head); also the session's flock file
    c<first seq>             one commit: header (first, last, batch_id, digest) + batch bytes
    b<sha256(batch_id)>      a hard link to that commit file (the idempotency index)
    s<sha256(owner)>         a sealed owner (empty)

A commit, under the exclusive flock: read the head, ``plan_commit``, create ``c<first>``
(``O_EXCL``; an orphan a killed writer left there is removed first), write + fsync it, link
``b<hash>`` to it (and create ``s<hash>`` for ``finish=True``), fsync the directory: the
commit is durable; then write the new head into the other slot + fdatasync: the commit
point. Three syncs per commit, no temp file, no rename. A crash before the head write leaves an orphan
(beyond the head's seq: never read, replaced by the next commit); a torn head slot fails its
checksum and the other slot, the previous head, is the head.

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

import bisect
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
from hookagent.errors import LogCorrupt, StorageDurabilityError
from hookagent.sessionlog import CommitResult, LogEvent, LogHead, LogWriter, SessionPage
from hookagent.sessionlog.batch import Row, decode_batch, rows_after
from hookagent.sessionlog.rules import check_holds, plan_acquire, plan_commit
from hookagent.store.ids import slot_name

from . import logsegment as seg
from . import posixio as io
from .logfiles import (
    SLOT,
    batch_name,
    commit_first,
    commit_name,
    decode_commit_file,
    decode_head_record,
    encode_commit_file,
    encode_head_record,
    head_doc,
    head_of,
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
        if not raw.strip(b"\x00"):
            return None  # never written (or only a first write torn before any byte landed)
        docs = [d for d in (decode_head_record(raw[:SLOT]), decode_head_record(raw[SLOT:])) if d]
        if not docs:
            if not raw[:SLOT].strip(b"\x00"):  # slot 0 never written: the only write was
                return None  # the first acquire, torn by a power loss (no commit depends on it)
            raise LogCorrupt(f"{where}: the head file is damaged (no slot passes its checksum)")
        doc = max(docs, key=lambda d: int(d["n"]))
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
        io.write_all(ses.hd, record, ((counter + 1) % 2) * SLOT)
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
            if self._mark_sealed(ses, owner):
                self.dur.fsync(ses.sd, "the session log directory (seal)")
            head = head_of(doc)
            if head.owner == owner:  # (the marker is durable first: never unsealed by a crash)
                self._write(ses, doc, attrs.evolve(head, owner=None, lease_until=0.0))

        self.locked(user_id, session_id, step, create=True, exclusive=True, absent=_never)

    def _mark_sealed(self, ses: Session, owner: str) -> bool:
        """Create the owner's seal marker; True if it is new (its entry not yet durable)."""
        try:
            fd = os.open(seal_name(owner), io.NEW_FLAGS, 0o600, dir_fd=ses.sd)
        except FileExistsError:
            return False
        os.close(fd)
        return True

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
            head = head_of(doc)
            plan = decide(head, self._prior(ses, batch_id, where))
            if plan.result is not None:
                return plan.result  # type: ignore[no-any-return]
            name = commit_name(plan.first_seq)
            body = encode_commit_file(plan.first_seq, plan.last_seq, batch_id, digest, data)
            self._put_commit(ses, name, body)
            link = batch_name(batch_id)
            try:
                os.link(name, link, src_dir_fd=ses.sd, dst_dir_fd=ses.sd, follow_symlinks=False)
            except FileExistsError:  # a stale link (``_prior`` did not trust it): replace it
                os.unlink(link, dir_fd=ses.sd)
                os.link(name, link, src_dir_fd=ses.sd, dst_dir_fd=ses.sd, follow_symlinks=False)
            if plan.seal is not None:
                self._mark_sealed(ses, plan.seal)
            self.dur.fsync(ses.sd, "the session log directory (commit)")  # the commit durable
            self._write(ses, doc, plan.head, plan.first_seq)  # the commit point
            starts = None if doc is None else _indexed(ses, doc)  # (current before it)
            if starts is not None and (not starts or starts[-1] < plan.first_seq):
                starts.append(plan.first_seq)
            elif starts is None:
                ses.index = None  # stale: the next read lists the names again
            return CommitResult(plan.first_seq, plan.last_seq, plan.head)

        def absent() -> CommitResult:
            decide(LogHead(), None)  # raises LogFenced: no lease on a log never written
            raise AssertionError("unreachable: an absent log holds no lease")

        return self.locked(
            writer.user_id, writer.session_id, step, create=False, exclusive=True, absent=absent
        )

    def _put_commit(self, ses: Session, name: str, body: bytes) -> None:
        """Write ``name`` whole and fsync it, replacing an orphan a killed writer left."""
        try:
            fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=ses.sd)
        except FileExistsError:  # an orphan (beyond the head): drop it and its index link
            self._drop_orphan(ses, name)
            fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=ses.sd)
        try:
            try:
                io.write_all(fd, body)
                self.dur.fsync(fd, "a session log commit")
            finally:
                os.close(fd)
        except BaseException:
            io.unlink_quiet(ses.sd, name)  # (never reached by the head: not a loss)
            raise

    def _drop_orphan(self, ses: Session, name: str) -> None:
        raw = _read_whole(ses.sd, name)
        if raw is not None:
            try:
                meta, _ = decode_commit_file(raw, "", name)
            except LogCorrupt:
                pass  # a torn orphan: no link to it is trusted anyway (``_prior`` checks)
            else:
                link = batch_name(meta["b"])
                if _same_file(ses.sd, link, name):
                    io.unlink_quiet(ses.sd, link)
        io.unlink_quiet(ses.sd, name)

    def _prior(self, ses: Session, batch_id: str, where: str) -> tuple[int, int, str] | None:
        """(first, last, digest) of the commit stored under ``batch_id``: its index link,
        trusted only while it is the commit file at its seq (an orphan's link is not)."""
        link = batch_name(batch_id)
        raw = _read_whole(ses.sd, link)
        if raw is None:
            return None
        try:
            meta, _ = decode_commit_file(raw, where, link)
        except LogCorrupt:  # an orphan torn by a power loss (a reached commit was fsynced;
            return None  # were it damaged, reading it fails closed)
        if meta["b"] != batch_id or not _same_file(ses.sd, link, commit_name(meta["f"])):
            return None
        return int(meta["f"]), int(meta["l"]), str(meta["d"])

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
            if seg.is_v2(doc):
                return _events(seg.commits(ses, doc, seq, where), seq, head, limit, where)
            starts = self._starts(ses, doc)
            i = max(0, bisect.bisect_right(starts, seq + 1) - 1)
            out: list[LogEvent] = []
            expect = seq + 1  # the commit holding it, unless the seqs before it are missing
            if i < len(starts) and starts[i] <= expect:
                expect = starts[i]
            for first in starts[i:]:
                if first > head:
                    break  # an orphan: never read
                if first != expect:
                    raise LogCorrupt(f"{where}: seqs {expect}..{first - 1} are missing")
                name = commit_name(first)
                raw = _read_whole(ses.sd, name)
                if raw is None:
                    raise LogCorrupt(f"{where}: commit file {name} (seq {first}) is missing")
                meta, data = decode_commit_file(raw, where, name)
                if meta["f"] != first:
                    raise LogCorrupt(f"{where}: commit file {name} holds seq {meta['f']}")
                expect = int(meta["l"]) + 1
                for e in decode_batch(data, first, where=where):
                    if seq < e.seq <= head:
                        out.append(e)
                        if limit is not None and len(out) >= limit:
                            return out
            short = limit is None or len(out) < limit
            if short and head > seq and (not out or out[-1].seq != head):
                raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
            return out

        return self.locked(user_id, session_id, step, create=False, exclusive=False, absent=list)

    def read_rows(self, user_id: str, session_id: str, seq: int) -> list[Row]:
        """``read_after(seq)`` as ``Row`` tuples, the same files and checks."""
        where = slot_name(user_id, session_id, "log")

        def step(ses: Session) -> list[Row]:
            doc = self._read(ses, where)
            head = 0 if doc is None else int(doc["seq"])
            if doc is None or head <= seq:
                return []
            if seg.is_v2(doc):
                return rows_after(seg.commits(ses, doc, seq, where), seq, head, where=where)
            starts = self._starts(ses, doc)
            i = max(0, bisect.bisect_right(starts, seq + 1) - 1)
            commits: list[tuple[int, int, bytes]] = []
            for first in starts[i:]:
                if first > head:
                    break  # an orphan: never read
                name = commit_name(first)
                raw = _read_whole(ses.sd, name)
                if raw is None:
                    raise LogCorrupt(f"{where}: commit file {name} (seq {first}) is missing")
                meta, data = decode_commit_file(raw, where, name)
                if meta["f"] != first:
                    raise LogCorrupt(f"{where}: commit file {name} holds seq {meta['f']}")
                commits.append((first, int(meta["l"]), data))
            return rows_after(commits, seq, head, where=where)

        return self.locked(user_id, session_id, step, create=False, exclusive=False, absent=list)

    def _starts(self, ses: Session, doc: Doc) -> list[int]:
        """The sorted first seqs of the session's commit files. Kept per session and
        incarnation; listed again only when the head's last commit is not in it (another
        process committed since): names only, no commit is read to find a seq."""
        known = _indexed(ses, doc)
        if known is not None:
            return known
        found = sorted(f for n in os.listdir(ses.sd) if (f := commit_first(n)) is not None)
        ses.index = (str(doc["life"]), found)
        return found

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


def _key(doc: Doc) -> tuple[Any, ...]:
    return (doc["life"], doc["n"], doc["lo"], doc["end"])


def _indexed(ses: Session, doc: Doc) -> list[int] | None:
    """The session's index if it is current for ``doc``: the same incarnation, and the
    head's last commit is in it. Every commit after the listing it came from starts after
    it (an orphan listed then is where the next commit starts), so if the last one is in
    it, all are."""
    if ses.index is None or ses.index[0] != doc["life"]:
        return None
    starts, last = ses.index[1], int(doc["lf"])
    k = bisect.bisect_left(starts, last)
    return starts if not last or (k < len(starts) and starts[k] == last) else None


def _never() -> NoReturn:
    raise AssertionError("unreachable: the session is created")


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _same_file(dir_fd: int, a: str, b: str) -> bool:
    try:
        sa = os.stat(a, dir_fd=dir_fd, follow_symlinks=False)
        sb = os.stat(b, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _read_whole(dir_fd: int, name: str) -> bytes | None:
    return io.read_file(dir_fd, name)
