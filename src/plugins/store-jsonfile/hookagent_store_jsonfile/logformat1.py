"""Format 1 of the local session log (main's layout before format 2): one file per commit.

Per session, in ``<root>/.sessionlog/<user>/<session>/`` beside ``head``:

    c<first seq>             one commit: header (first, last, batch_id, digest) + batch bytes
    b<sha256(batch_id)>      a hard link to that commit file (the idempotency index)
    s<sha256(owner)>         a sealed owner (empty)

A commit, under the exclusive flock: read the head, ``plan_commit``, create ``c<first>``
(``O_EXCL``; an orphan a killed writer left there is removed first), write + fsync it, link
``b<hash>`` to it (and create ``s<hash>`` for ``finish=True``), fsync the directory: the
commit is durable; then write the new head into the other slot + fdatasync: the commit
point. Three syncs per commit, no temp file, no rename. A crash before the head write leaves
an orphan (beyond the head's seq: never read, replaced by the next commit); a torn head slot
fails its checksum and the other slot, the previous head, is the head.

Sessions created in format 1 are read and written here as before; ``loglocal`` decides which
format a session is in from its head (``logsegment.is_v2``) and keeps the head and leases.
"""

from __future__ import annotations

import bisect
import os
import stat
from collections.abc import Iterator
from typing import Any

from hookagent.errors import LogCorrupt

from . import posixio as io
from .logfiles import (
    batch_name,
    commit_first,
    commit_name,
    decode_commit_file,
    encode_commit_file,
    seal_name,
)
from .logtree import Session

Doc = dict[str, Any]
Commit = tuple[int, int, bytes]


def put_commit(dur: io.Durability, ses: Session, name: str, body: bytes) -> None:
    """Write ``name`` whole and fsync it, replacing an orphan a killed writer left."""
    try:
        fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=ses.sd)
    except FileExistsError:  # an orphan (beyond the head): drop it and its index link
        drop_orphan(ses, name)
        fd = os.open(name, io.NEW_FLAGS, 0o600, dir_fd=ses.sd)
    try:
        try:
            io.write_all(fd, body)
            dur.fsync(fd, "a session log commit")
        finally:
            os.close(fd)
    except BaseException:
        io.unlink_quiet(ses.sd, name)  # (never reached by the head: not a loss)
        raise


def write_commit(
    dur: io.Durability, ses: Session, first: int, last: int, batch_id: str, digest: str,
    data: bytes, seal: str | None,
) -> None:  # fmt: skip
    """Everything of a format-1 commit before its head write: the commit file, its index
    link, a finished run's seal marker, and the directory fsync (the commit durable)."""
    name = commit_name(first)
    put_commit(dur, ses, name, encode_commit_file(first, last, batch_id, digest, data))
    link = batch_name(batch_id)
    try:
        os.link(name, link, src_dir_fd=ses.sd, dst_dir_fd=ses.sd, follow_symlinks=False)
    except FileExistsError:  # a stale link (``prior`` did not trust it): replace it
        os.unlink(link, dir_fd=ses.sd)
        os.link(name, link, src_dir_fd=ses.sd, dst_dir_fd=ses.sd, follow_symlinks=False)
    if seal is not None:
        mark_sealed(ses, seal)
    dur.fsync(ses.sd, "the session log directory (commit)")


def noted(ses: Session, doc: Doc | None, first: int) -> None:
    """After a format-1 commit at ``first``: extend the handle's index (or drop it)."""
    starts = None if doc is None else indexed(ses, doc)  # (current before it)
    if starts is not None and (not starts or starts[-1] < first):
        starts.append(first)
    elif starts is None:
        ses.index = None  # stale: the next read lists the names again


def mark_sealed(ses: Session, owner: str) -> bool:
    """Create the owner's seal marker; True if it is new (its entry not yet durable)."""
    try:
        fd = os.open(seal_name(owner), io.NEW_FLAGS, 0o600, dir_fd=ses.sd)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def drop_orphan(ses: Session, name: str) -> None:
    raw = io.read_file(ses.sd, name)
    if raw is not None:
        try:
            meta, _ = decode_commit_file(raw, "", name)
        except LogCorrupt:
            pass  # a torn orphan: no link to it is trusted anyway (``prior`` checks)
        else:
            link = batch_name(meta["b"])
            if same_file(ses.sd, link, name):
                io.unlink_quiet(ses.sd, link)
    io.unlink_quiet(ses.sd, name)


def prior(ses: Session, batch_id: str, where: str) -> tuple[int, int, str] | None:
    """(first, last, digest) of the commit stored under ``batch_id``: its index link,
    trusted only while it is the commit file at its seq (an orphan's link is not)."""
    link = batch_name(batch_id)
    raw = io.read_file(ses.sd, link)
    if raw is None:
        return None
    try:
        meta, _ = decode_commit_file(raw, where, link)
    except LogCorrupt:  # an orphan torn by a power loss (a reached commit was fsynced;
        return None  # were it damaged, reading it fails closed)
    if meta["b"] != batch_id or not same_file(ses.sd, link, commit_name(meta["f"])):
        return None
    return int(meta["f"]), int(meta["l"]), str(meta["d"])


def commits(ses: Session, doc: Doc, seq: int, head: int, where: str) -> Iterator[Commit]:
    """(first, last, batch bytes) of the commit files from the one holding ``seq + 1`` up to
    the head, read one at a time as they are consumed (an orphan beyond the head is never
    read); a missing or damaged file is ``LogCorrupt``. The caller checks for gaps
    (``loglocal._events``, ``rows_after``)."""
    found = starts(ses, doc)
    for first in found[max(0, bisect.bisect_right(found, seq + 1) - 1) :]:
        if first > head:
            break  # an orphan: never read
        name = commit_name(first)
        raw = io.read_file(ses.sd, name)
        if raw is None:
            raise LogCorrupt(f"{where}: commit file {name} (seq {first}) is missing")
        meta, data = decode_commit_file(raw, where, name)
        if meta["f"] != first:
            raise LogCorrupt(f"{where}: commit file {name} holds seq {meta['f']}")
        yield first, int(meta["l"]), data


def starts(ses: Session, doc: Doc) -> list[int]:
    """The sorted first seqs of the session's commit files. Kept per session and
    incarnation; listed again only when the head's last commit is not in it (another
    process committed since): names only, no commit is read to find a seq."""
    known = indexed(ses, doc)
    if known is not None:
        return known
    found = sorted(f for n in os.listdir(ses.sd) if (f := commit_first(n)) is not None)
    ses.index = (str(doc["life"]), found)
    return found


def indexed(ses: Session, doc: Doc) -> list[int] | None:
    """The session's index if it is current for ``doc``: the same incarnation, and the
    head's last commit is in it. Every commit after the listing it came from starts after
    it (an orphan listed then is where the next commit starts), so if the last one is in
    it, all are."""
    if ses.index is None or ses.index[0] != doc["life"]:
        return None
    found, last = ses.index[1], int(doc["lf"])
    k = bisect.bisect_left(found, last)
    return found if not last or (k < len(found) and found[k] == last) else None


def same_file(dir_fd: int, a: str, b: str) -> bool:
    try:
        sa = os.stat(a, dir_fd=dir_fd, follow_symlinks=False)
        sb = os.stat(b, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
