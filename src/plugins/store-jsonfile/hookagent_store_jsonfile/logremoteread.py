"""Reads of the fsspec session log: the commits a head reaches, and listing.

A reader lists only the commit buckets it needs (``c/b<first // 1024>``): the one holding
``seq + 1`` (and earlier ones while it has no commit starting at or before it), then the
following ones up to the head's. Per first seq the commit with the highest version not
newer than the head and newer than the incarnation's base is the one the head reached: an
orphan at that seq was written for an earlier version (the head's seq only grows within an
incarnation, so a later commit at that seq can only be made after every earlier attempt).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from hookagent.errors import LogCorrupt
from hookagent.sessionlog import LogEvent, SessionPage
from hookagent.sessionlog.batch import decode_batch
from hookagent.store.ids import slot_name

from .layout import id_parts, parts_to_id
from .remotelist import leaves

if TYPE_CHECKING:
    from .logremote import Cur, FsspecLogCore

BUCKET = 1024
COMMIT_NAME = re.compile(r"c(\d{16})\.(\d{16})$")


def bucket_of(core: FsspecLogCore, spath: str, cur: Cur, bucket: int) -> list[tuple[int, int]]:
    """(first, version) of this incarnation's commits in one bucket, newest per first."""
    best: dict[int, int] = {}
    for name in core._ls(f"{spath}/c/b{bucket:010d}"):
        m = COMMIT_NAME.match(name)
        if m is None:
            continue
        first, v = int(m.group(1)), int(m.group(2))
        if cur.base < v <= cur.v and v > best.get(first, 0):
            best[first] = v
    return sorted(best.items())


def read_after(
    core: FsspecLogCore, user_id: str, session_id: str, seq: int, limit: int | None
) -> list[LogEvent]:
    where = slot_name(user_id, session_id, "log")
    head, commits = _commits(core, user_id, session_id, seq, where)
    out: list[LogEvent] = []
    for first, _, data in commits:
        for e in decode_batch(data, first, where=where):
            if seq < e.seq <= head:
                out.append(e)
                if limit is not None and len(out) >= limit:
                    return out
    short = limit is None or len(out) < limit
    if short and head > seq and (not out or out[-1].seq != head):
        raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
    return out


def read_commits(
    core: FsspecLogCore, user_id: str, session_id: str, seqs: Sequence[int]
) -> tuple[int, list[tuple[int, int, bytes] | None]]:
    """(head seq, per seq the commit holding ``seq + 1`` or None): ``read_after(seq, 1)``
    undecoded for each, from one read of the head."""
    where = slot_name(user_id, session_id, "log")
    spath = core.spath(user_id, session_id)
    cur = core.latest(spath, where)
    head = cur.head.seq
    out = [
        next(_iter(core, spath, cur, seq, head, where), None) if head > seq else None
        for seq in seqs
    ]
    return head, out


def _commits(
    core: FsspecLogCore, user_id: str, session_id: str, seq: int, where: str
) -> tuple[int, Iterator[tuple[int, int, bytes]]]:
    """The head's seq, and (first, last, bytes) of the commits it reaches from the one
    holding ``seq + 1``, read as they are iterated; ``LogCorrupt`` on a gap or a missing
    commit file."""
    spath = core.spath(user_id, session_id)
    cur = core.latest(spath, where)
    head = cur.head.seq
    return head, _iter(core, spath, cur, seq, head, where) if head > seq else iter(())


def _iter(
    core: FsspecLogCore, spath: str, cur: Cur, seq: int, head: int, where: str
) -> Iterator[tuple[int, int, bytes]]:
    top = low = (seq + 1) // BUCKET  # the buckets listed: low..top
    chain = bucket_of(core, spath, cur, top)
    while low > 0 and not (chain and chain[0][0] <= seq + 1):  # the commit holding seq+1
        low -= 1
        chain = bucket_of(core, spath, cur, low) + chain
    starts = [f for f, _ in chain]
    i = 0
    while i + 1 < len(starts) and starts[i + 1] <= seq + 1:
        i += 1
    expect = seq + 1  # the commit holding it, unless the seqs before it are missing
    if i < len(chain) and chain[i][0] <= expect:
        expect = chain[i][0]
    while True:
        if i >= len(chain):
            top += 1
            if top > head // BUCKET:
                return
            chain += bucket_of(core, spath, cur, top)
            continue
        first, v = chain[i]
        i += 1
        if first > head:
            return  # an orphan: never read
        if first != expect:
            raise LogCorrupt(f"{where}: seqs {expect}..{first - 1} are missing")
        got = core._commit_at(spath, cur, first, v, where)
        if got is None:
            raise LogCorrupt(f"{where}: the commit at seq {first} (version {v}) is missing")
        meta, data = got
        if meta["f"] != first:
            raise LogCorrupt(f"{where}: commit c{first:016d}.{v:016d} holds seq {meta['f']}")
        expect = int(meta["l"]) + 1
        yield first, int(meta["l"]), data


def list_page(core: FsspecLogCore, user_id: str, limit: int, cursor: str | None) -> SessionPage:
    upath = "/".join([core.root, *id_parts(user_id)])
    found = sorted(
        (sid, parts) for parts in leaves(core.fs, upath, [])
        if (sid := parts_to_id(parts)) is not None
    )  # fmt: skip
    ids: list[str] = []
    for sid, parts in found:
        if cursor and sid <= cursor:
            continue
        where = slot_name(user_id, sid, "log")
        if core.latest("/".join([upath, *parts]), where).head.seq <= 0:
            continue
        if len(ids) == limit:
            return SessionPage(tuple(ids), ids[-1])
        ids.append(sid)
    return SessionPage(tuple(ids), None)
