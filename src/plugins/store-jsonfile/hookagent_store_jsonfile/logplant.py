"""Bytes behind a session log's back, for the conformance suite's crash checks (as
``InMemorySessionLog.plant_orphan``/``plant_head``): an orphan (a commit written whose head
never moved, what a writer killed mid-commit leaves) and a head moved without its commit."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs
from hookagent.sessionlog import LogEvent, LogHead
from hookagent.sessionlog.rules import encode_commit

from . import logsegment
from .logfiles import batch_name, commit_name, encode_commit_file, head_of
from .loglocal import LocalLogCore
from .logremote import Cur, FsspecLogCore
from .logtree import Session


def plant_orphan(
    log: Any, user_id: str, session_id: str, batch_id: str, events: Sequence[LogEvent]
) -> None:
    """A commit at ``head.seq + 1`` (with its index entry) whose head never moved."""
    data, digest = encode_commit(events)
    core = log._core
    if isinstance(core, LocalLogCore):

        def put(ses: Session) -> None:
            doc = core._read(ses, "plant")
            first = head_of(doc).seq + 1
            if logsegment.is_v2(doc):  # the record at the head's end, the head unmoved
                record = logsegment.encode_record(
                    first, first + len(events) - 1, batch_id, digest, data, None
                )
                os.pwrite(ses.hd, record, int(doc["end"]))  # type: ignore[index]
                return
            body = encode_commit_file(first, first + len(events) - 1, batch_id, digest, data)
            name = commit_name(first)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            with open(os.open(name, flags, 0o600, dir_fd=ses.sd), "wb") as fh:
                fh.write(body)
            link = batch_name(batch_id)
            try:
                os.unlink(link, dir_fd=ses.sd)
            except FileNotFoundError:
                pass
            os.link(name, link, src_dir_fd=ses.sd, dst_dir_fd=ses.sd)

        core.locked(user_id, session_id, put, create=True, exclusive=True, absent=lambda: None)
        return
    assert isinstance(core, FsspecLogCore)
    spath = core.spath(user_id, session_id)
    cur = core.latest(spath, "plant")
    first, v = cur.head.seq + 1, cur.v + 1
    body = encode_commit_file(first, first + len(events) - 1, batch_id, digest, data)
    core.put(core._commit_path(spath, first, v), body)
    core.put(f"{spath}/x/{batch_name(batch_id)}/{v:016d}", b"")


def plant_head(log: Any, user_id: str, session_id: str, seq: int) -> None:
    """Move the head to ``seq`` without a commit (a head pointing at a missing commit)."""
    core = log._core
    if isinstance(core, LocalLogCore):

        def move(ses: Session) -> None:
            doc = core._read(ses, "plant")
            core._write(ses, doc, attrs.evolve(head_of(doc), seq=seq))

        core.locked(user_id, session_id, move, create=True, exclusive=True, absent=lambda: None)
        return
    assert isinstance(core, FsspecLogCore)
    spath = core.spath(user_id, session_id)
    cur: Cur = core.latest(spath, "plant")
    head = LogHead() if cur.doc is None else cur.head
    record = core._head_record(cur, attrs.evolve(head, seq=seq))
    assert core.create(core._head_path(spath, cur.v + 1), record)
