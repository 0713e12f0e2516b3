"""The session log on fsspec filesystems: one head object per head version, created with
the state store's conditional write (exclusive create, ``remotecas.CasCore.create``).

Per session, under ``<root>/.sessionlog/<user>/<session>/``::

    h/b<v // 1024>/v<v>            head version v (never freed, never rewritten)
    c/b<first // 1024>/c<first>.<v>  a commit at ``first`` made for head version v
    x/<sha256(batch_id)>/<v>       the idempotency index: that batch went into version v
    s/<sha256(owner)>.<life>       a sealed owner in this incarnation of the log

Every change (acquire, renew, release, seal, commit, delete) reads the newest head v,
decides, writes what the head will name (the commit object, created exclusively, and its
index and seal markers), then creates ``v+1`` exclusively: exactly one writer can, the
others re-read and decide again. A commit object whose head version never came (a crash, or
a writer that lost the race) is an orphan: the head's seq does not reach it, or a later
commit at the same seq has a higher version; when a writer finds its commit name taken, it
burns that head version (creates ``v+1`` as a copy of ``v``) and tries again. A delete is a
tombstone head; objects of an older incarnation (versions up to the tombstone's ``base``)
are ignored, then removed.

``writers="single"``: exclusive create is emulated under a lock held in this process (one
writer process per root); ``"multi"`` needs the backend's own, probed at construction.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from hookagent.errors import LogCorrupt, StoreUnavailable
from hookagent.sessionlog import CommitResult, LogEvent, LogHead, LogWriter, SessionPage
from hookagent.sessionlog.rules import check_holds, plan_acquire, plan_commit
from hookagent.store.ids import slot_name

from . import logremoteread
from .layout import id_parts
from .logfiles import (
    LOG_DIR,
    batch_name,
    decode_commit_file,
    decode_head_record,
    encode_commit_file,
    encode_head_record,
    head_doc,
    head_of,
    seal_name,
)
from .logremoteread import BUCKET, COMMIT_NAME
from .posixio import write_all
from .remotecas import CasCore

RETRIES = 16
_HEAD = re.compile(r"v(\d{16})$")
_BUCKET = re.compile(r"b(\d{10})$")
Doc = dict[str, Any]


class Burn(Exception):
    """A commit name was taken (an orphan of this head version): burn the version, retry."""


def _base(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


@attrs.frozen
class Cur:
    """The newest head: its version, stored doc (None: no head or a tombstone)."""

    v: int
    doc: Doc | None
    base: int
    """The version this incarnation began after (objects at or below it are stale)."""

    @property
    def head(self) -> LogHead:
        return head_of(self.doc)

    @property
    def life(self) -> str | None:
        return None if self.doc is None else str(self.doc["life"])


class FsspecLogCore:
    """Blocking implementation of ``FsspecJsonFileSessionLog``."""

    def __init__(
        self, fs: Any, root: str, *, writers: str, lock: threading.Lock,
        clock: Callable[[], float],
    ) -> None:  # fmt: skip
        self.fs, self.root = fs, f"{root.rstrip('/')}/{LOG_DIR}"
        self.writers, self.clock = writers, clock
        self.cas = CasCore(fs, self.root, 0)
        self._lock = lock
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.local = protocol in ("file", "local")

    def _one(self) -> threading.Lock:
        """The root's lock in this process, held for a whole step: with ``writers="single"``
        it is the only guard; with ``"multi"`` exclusive create decides between processes,
        and the lock keeps this process's own steps from racing on a backend whose
        ``"xb"`` is checked at open and published at close (``memory://``)."""
        return self._lock

    def create(self, path: str, data: bytes) -> bool:
        """Exclusive create; False if the object exists."""
        try:
            if self.writers == "single":  # (under the process lock: nobody else writes)
                if self.fs.exists(path):
                    return False
                self.put(path, data)
            elif self.local:
                self._link_create(path, data)
            else:
                self.cas.create(path, data)
        except FileExistsError:
            return False
        return True

    def _link_create(self, path: str, data: bytes) -> None:
        """On the local fsspec filesystem ``"xb"`` is O_EXCL then a write: a writer killed
        between them would leave a torn head version forever. A whole temp file hard-linked
        to the name is exclusive and never torn."""
        real = self.fs._strip_protocol(path)
        parent = os.path.dirname(real)
        os.makedirs(parent, mode=0o700, exist_ok=True)
        tmp = os.path.join(parent, f".tmp.{os.getpid()}.{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.link(tmp, real, follow_symlinks=False)
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def put(self, path: str, data: bytes) -> None:
        """A plain write (markers named by the head version they go with)."""
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        self.fs.pipe_file(path, data)

    def spath(self, user_id: str, session_id: str) -> str:
        return "/".join([self.root, *id_parts(user_id), *id_parts(session_id)])

    def _ls(self, path: str) -> list[str]:
        try:
            return [_base(n) for n in self.fs.ls(path, detail=False)]
        except FileNotFoundError:
            return []

    # ------------------------------------------------------------------ heads

    def latest(self, spath: str, where: str) -> Cur:
        for attempt in range(25):
            v = 0
            for bucket in sorted(
                (int(m.group(1)) for n in self._ls(f"{spath}/h") if (m := _BUCKET.match(n))),
                reverse=True,
            ):
                found = [
                    int(m.group(1))
                    for n in self._ls(f"{spath}/h/b{bucket:010d}")
                    if (m := _HEAD.match(n))
                ]
                if found:
                    v = max(found)
                    break
            if not v:
                return Cur(0, None, 0)
            raw = self.cas.cat(self._head_path(spath, v))
            doc = None if raw is None else decode_head_record(raw)
            if doc is None or type(doc.get("base")) is not int or doc["n"] != v:
                if attempt < 24:  # a local "xb" object shows while it is written
                    time.sleep(min(0.002 * (attempt + 1), 0.02))
                    continue
                raise LogCorrupt(f"{where}: head version {v} is damaged")
            if doc.get("deleted"):
                return Cur(v, None, v)
            return Cur(v, doc, int(doc["base"]))
        raise AssertionError("unreachable")

    def _head_path(self, spath: str, v: int) -> str:
        return f"{spath}/h/b{v // BUCKET:010d}/v{v:016d}"

    def _head_record(self, cur: Cur, head: LogHead, last_first: int = -1) -> bytes:
        life = cur.life or secrets.token_hex(8)
        lf = (0 if cur.doc is None else int(cur.doc["lf"])) if last_first < 0 else last_first
        doc = head_doc(head, counter=cur.v + 1, last_first=lf, life=life)
        doc["base"] = cur.base
        return encode_head_record(doc)

    def step(
        self,
        spath: str,
        where: str,
        decide: Callable[[Cur], tuple[Any, bytes | None, Callable[[int, Cur], None] | None]],
    ) -> Any:
        """Read the newest head, ``decide`` -> (result, new head record or None for no
        change, writes to make first), then create the next head version; again on a race."""
        with self._one():
            for _ in range(RETRIES):
                cur = self.latest(spath, where)
                result, record, before = decide(cur)
                if record is None:
                    return result
                if before is not None:
                    try:
                        before(cur.v + 1, cur)
                    except Burn:
                        if cur.doc is not None:  # the taken name's version is never used
                            self.create(self._head_path(spath, cur.v + 1), self._burn(cur))
                        continue
                if self.create(self._head_path(spath, cur.v + 1), record):
                    return result
        raise StoreUnavailable(f"{where}: too many concurrent writers, the change kept losing")

    def _burn(self, cur: Cur) -> bytes:
        return self._head_record(cur, cur.head)

    # ------------------------------------------------------------------ lease

    def head(self, user_id: str, session_id: str) -> LogHead:
        where = slot_name(user_id, session_id, "log")
        return self.latest(self.spath(user_id, session_id), where).head

    def _sealed(self, spath: str, cur: Cur, owner: str) -> bool:
        if cur.life is None:
            return False
        return bool(self.fs.exists(f"{spath}/s/{seal_name(owner)}.{cur.life}"))

    def acquire(self, user_id: str, session_id: str, owner: str, lease: float) -> LogWriter:
        spath, where = self.spath(user_id, session_id), slot_name(user_id, session_id, "log")

        def decide(cur: Cur) -> Any:
            new = plan_acquire(
                cur.head, user_id, session_id, owner, self.clock(), lease,
                sealed=self._sealed(spath, cur, owner),
            )  # fmt: skip
            w = LogWriter(user_id, session_id, owner, new.epoch, new.lease_until, new.seq)
            return w, self._head_record(cur, new), None

        w: LogWriter = self.step(spath, where, decide)
        return w

    def renew(self, writer: LogWriter, lease: float) -> LogWriter:
        spath = self.spath(writer.user_id, writer.session_id)

        def decide(cur: Cur) -> Any:
            now = self.clock()
            check_holds(cur.head, writer, now, "renew")
            new = attrs.evolve(cur.head, lease_until=now + lease)
            return attrs.evolve(writer, lease_until=now + lease), self._head_record(cur, new), None

        w: LogWriter = self.step(spath, slot_name(writer.user_id, writer.session_id, "log"), decide)
        return w

    def release(self, writer: LogWriter) -> bool:
        spath = self.spath(writer.user_id, writer.session_id)

        def decide(cur: Cur) -> Any:
            head = cur.head
            if cur.doc is None or head.epoch != writer.epoch or head.owner != writer.owner:
                return False, None, None
            new = attrs.evolve(head, owner=None, lease_until=0.0)
            return True, self._head_record(cur, new), None

        done: bool = self.step(spath, slot_name(writer.user_id, writer.session_id, "log"), decide)
        return done

    def seal(self, user_id: str, session_id: str, owner: str) -> None:
        """Always a new head version: ordered with every acquire (never an unsealed win)."""
        spath, where = self.spath(user_id, session_id), slot_name(user_id, session_id, "log")

        def decide(cur: Cur) -> Any:
            head = cur.head
            if head.owner == owner:
                head = attrs.evolve(head, owner=None, lease_until=0.0)
            record = self._head_record(cur, head)
            life = decode_head_record(record)["life"]  # type: ignore[index]

            def before(v: int, cur: Cur) -> None:
                self.put(f"{spath}/s/{seal_name(owner)}.{life}", b"")

            return None, record, before

        self.step(spath, where, decide)

    def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool:
        spath, where = self.spath(user_id, session_id), slot_name(user_id, session_id, "log")
        return self._sealed(spath, self.latest(spath, where), owner)

    # ------------------------------------------------------------------ commit

    def _prior(
        self, spath: str, cur: Cur, batch_id: str, where: str
    ) -> tuple[int, int, str] | None:
        """The commit ``batch_id`` went into, if a head version of this incarnation made it."""
        for name in sorted(self._ls(f"{spath}/x/{batch_name(batch_id)}"), reverse=True):
            if not name.isdigit() or not cur.base < int(name) <= cur.v:
                continue
            raw = self.cas.cat(self._head_path(spath, int(name)))
            doc = None if raw is None else decode_head_record(raw)
            if doc is None or doc.get("cid") != batch_id:
                continue  # that version was won by another change: not this batch's
            found = self._commit_at(spath, cur, int(doc["lf"]), int(name), where)
            if found is not None and found[0]["b"] == batch_id:
                meta = found[0]
                return int(meta["f"]), int(meta["l"]), str(meta["d"])
        return None

    def _commit_path(self, spath: str, first: int, v: int) -> str:
        return f"{spath}/c/b{first // BUCKET:010d}/c{first:016d}.{v:016d}"

    def _commit_at(
        self, spath: str, cur: Cur, first: int, v: int, where: str
    ) -> tuple[dict[str, Any], bytes] | None:
        raw = self.cas.cat(self._commit_path(spath, first, v))
        if raw is None:
            return None
        return decode_commit_file(raw, where, f"c{first:016d}.{v:016d}")

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
        spath = self.spath(writer.user_id, writer.session_id)
        where = slot_name(writer.user_id, writer.session_id, "log")

        def decide(cur: Cur) -> Any:
            prior = None if cur.doc is None else self._prior(spath, cur, batch_id, where)
            plan = plan_commit(
                cur.head, writer, batch_id, expected_seq, events, data, digest, self.clock(),
                prior=prior, finish=finish,
            )  # fmt: skip
            if plan.result is not None:
                return plan.result, None, None
            record = self._head_record(cur, plan.head, plan.first_seq)
            body = encode_commit_file(plan.first_seq, plan.last_seq, batch_id, digest, data)

            def before(v: int, cur: Cur) -> None:
                if not self.create(self._commit_path(spath, plan.first_seq, v), body):
                    raise Burn
                self.put(f"{spath}/x/{batch_name(batch_id)}/{v:016d}", b"")
                if plan.seal is not None:
                    self.put(f"{spath}/s/{seal_name(plan.seal)}.{cur.life}", b"")

            return CommitResult(plan.first_seq, plan.last_seq, plan.head), record, before

        return self.step(spath, where, decide)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ reads

    def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None
    ) -> list[LogEvent]:
        return logremoteread.read_after(self, user_id, session_id, seq, limit)

    def read_commits(
        self, user_id: str, session_id: str, seqs: Sequence[int]
    ) -> tuple[int, list[tuple[int, int, bytes] | None]]:
        return logremoteread.read_commits(self, user_id, session_id, seqs)

    def list_page(self, user_id: str, limit: int, cursor: str | None) -> SessionPage:
        return logremoteread.list_page(self, user_id, limit, cursor)

    # ------------------------------------------------------------------ delete and list

    def delete(self, user_id: str, session_id: str) -> bool:
        spath, where = self.spath(user_id, session_id), slot_name(user_id, session_id, "log")

        old: list[str] = []

        def decide(cur: Cur) -> Any:
            if cur.v == 0 or (cur.doc is None and cur.base == cur.v):
                return False, None, None  # never written, or already a tombstone
            old[:] = [cur.life or ""]
            doc = head_doc(LogHead(), counter=cur.v + 1, last_first=0, life="-")
            doc.update(base=cur.v + 1, deleted=True)
            return True, encode_head_record(doc), None

        existed = bool(self.step(spath, where, decide))
        if existed:  # best effort: what the tombstone's incarnation no longer names
            tomb = self.latest(spath, where)
            for sub in ("c", "x"):
                for bucket in self._ls(f"{spath}/{sub}"):
                    for name in self._ls(f"{spath}/{sub}/{bucket}"):
                        m = COMMIT_NAME.match(name)
                        v = int(m.group(2)) if m else int(name) if name.isdigit() else None
                        if v is not None and v <= tomb.base:
                            self.cas.rm(f"{spath}/{sub}/{bucket}/{name}")
            for name in self._ls(f"{spath}/s"):
                if name.endswith(f".{old[0]}"):  # (a new incarnation's seals have its life)
                    self.cas.rm(f"{spath}/s/{name}")
        return existed
