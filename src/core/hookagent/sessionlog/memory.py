"""The in-memory session log: tests, demos and the reference the conformance suite is
written against. Everything is lost on exit.

Commits are kept as the bytes ``encode_batch`` made (so a caller cannot change what is
stored) in a per-session list ordered by first seq; the head moves only after the commit is
in place, as on a durable backend.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Sequence

import attrs

from ..errors import LogCorrupt
from ..store.ids import check_cursor, check_id, check_page_limit, slot_name
from .base import CommitResult, LogEvent, LogHead, LogWriter, SessionPage
from .batch import Row, decode_batch, rows_after
from .rules import (
    check_after,
    check_batch_id,
    check_holds,
    check_lease,
    check_owner,
    check_session,
    check_writer,
    encode_commit,
    plan_acquire,
    plan_commit,
)


@attrs.define
class _Commit:
    first_seq: int
    last_seq: int
    batch_id: str
    digest: str
    data: bytes


@attrs.define
class _Session:
    head: LogHead = attrs.Factory(LogHead)
    starts: list[int] = attrs.Factory(list)
    commits: list[_Commit] = attrs.Factory(list)
    by_batch: dict[str, int] = attrs.Factory(dict)
    sealed: set[str] = attrs.Factory(set)


class InMemorySessionLog:
    """A thread-safe session log held in this process (``locality = "process"``)."""

    locality = "process"

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._sessions: dict[str, dict[str, _Session]] = {}  # user_id first, always
        self._lock = threading.Lock()
        self._clock = clock

    def __repr__(self) -> str:
        return "InMemorySessionLog()"

    def another_handle(self) -> InMemorySessionLog:
        """A second handle on the same data (what another process is to a shared backend),
        of this handle's class (a subclass's behaviour holds on both)."""
        other = type(self)(clock=self._clock)
        other._sessions, other._lock = self._sessions, self._lock
        return other

    def _get(self, user_id: str, session_id: str) -> _Session | None:
        return self._sessions.get(user_id, {}).get(session_id)

    def _make(self, user_id: str, session_id: str) -> _Session:
        s = self._sessions.get(user_id, {}).get(session_id)
        if s is None:  # (a new _Session only when there is none: five fields' factories)
            s = self._sessions.setdefault(user_id, {}).setdefault(session_id, _Session())
        return s

    async def head(self, user_id: str, session_id: str) -> LogHead:
        check_session(user_id, session_id)
        with self._lock:
            s = self._get(user_id, session_id)
            return LogHead() if s is None else s.head

    async def acquire(
        self, user_id: str, session_id: str, owner: str, lease_seconds: float
    ) -> LogWriter:
        check_session(user_id, session_id)
        check_owner(owner)
        lease = check_lease(lease_seconds)
        with self._lock:
            s = self._make(user_id, session_id)
            head = plan_acquire(
                s.head, user_id, session_id, owner, self._clock(), lease, sealed=owner in s.sealed
            )
            s.head = head
            return LogWriter(user_id, session_id, owner, head.epoch, head.lease_until, head.seq)

    async def renew(self, writer: LogWriter, lease_seconds: float) -> LogWriter:
        check_writer(writer)
        lease = check_lease(lease_seconds)
        with self._lock:
            now = self._clock()
            if self._get(writer.user_id, writer.session_id) is None:  # a refusal stores nothing
                check_holds(LogHead(), writer, now, "renew")
            s = self._make(writer.user_id, writer.session_id)
            check_holds(s.head, writer, now, "renew")
            s.head = attrs.evolve(s.head, lease_until=now + lease)
            return attrs.evolve(writer, lease_until=now + lease)

    async def release(self, writer: LogWriter) -> bool:
        check_writer(writer)
        with self._lock:
            s = self._get(writer.user_id, writer.session_id)
            if s is None or s.head.epoch != writer.epoch or s.head.owner != writer.owner:
                return False
            s.head = attrs.evolve(s.head, owner=None, lease_until=0.0)
            return True

    async def seal(self, user_id: str, session_id: str, owner: str) -> None:
        check_session(user_id, session_id)
        check_owner(owner)
        with self._lock:
            s = self._make(user_id, session_id)
            s.sealed.add(owner)
            if s.head.owner == owner:
                s.head = attrs.evolve(s.head, owner=None, lease_until=0.0)

    async def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool:
        check_session(user_id, session_id)
        check_owner(owner)
        with self._lock:
            s = self._get(user_id, session_id)
            return s is not None and owner in s.sealed

    async def commit(
        self,
        writer: LogWriter,
        batch_id: str,
        expected_seq: int,
        events: Sequence[LogEvent],
        *,
        finish: bool = False,
    ) -> CommitResult:
        check_writer(writer)
        check_batch_id(batch_id)
        data, digest = encode_commit(events)
        with self._lock:
            s = self._get(writer.user_id, writer.session_id)
            if s is None:  # a refusal stores nothing
                check_holds(LogHead(), writer, self._clock(), "commit")
                s = self._make(writer.user_id, writer.session_id)
            prior = None
            index = s.by_batch.get(batch_id)
            if index is not None:
                c = s.commits[index]
                prior = (c.first_seq, c.last_seq, c.digest)
            plan = plan_commit(
                s.head,
                writer,
                batch_id,
                expected_seq,
                events,
                data,
                digest,
                self._clock(),
                prior=prior,
                finish=finish,
            )
            if plan.result is not None:
                return plan.result
            # an orphan (a commit whose head never moved) would sit at this seq: drop it
            while s.starts and s.starts[-1] >= plan.first_seq:
                s.starts.pop()
                gone = s.commits.pop()
                s.by_batch.pop(gone.batch_id, None)
            s.starts.append(plan.first_seq)
            s.commits.append(_Commit(plan.first_seq, plan.last_seq, batch_id, digest, data))
            s.by_batch[batch_id] = len(s.commits) - 1
            if plan.seal is not None:
                s.sealed.add(plan.seal)
            s.head = plan.head  # after the commit is in place
            return CommitResult(plan.first_seq, plan.last_seq, plan.head)

    async def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None = None
    ) -> list[LogEvent]:
        check_session(user_id, session_id)
        check_after(seq, limit)
        with self._lock:
            s = self._get(user_id, session_id)
            if s is None:
                return []
            head = s.head.seq
            i = max(0, bisect.bisect_right(s.starts, seq + 1) - 1)
            picked = [c for c in s.commits[i:] if c.first_seq <= head]
        where = slot_name(user_id, session_id, "log")
        out: list[LogEvent] = []
        expect = seq + 1  # the first commit picked holds it, unless the seqs before are missing
        if picked and picked[0].first_seq <= expect:
            expect = picked[0].first_seq
        for c in picked:
            if c.first_seq != expect:
                raise LogCorrupt(f"{where}: seqs {expect}..{c.first_seq - 1} are missing")
            expect = c.last_seq + 1
            for e in decode_batch(c.data, c.first_seq, where=where):
                if e.seq > seq and e.seq <= head:
                    out.append(e)
                    if limit is not None and len(out) >= limit:
                        return out
        short = limit is None or len(out) < limit
        if short and head > seq and (not out or out[-1].seq != head):
            raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
        return out

    async def read_rows_after(self, user_id: str, session_id: str, seq: int) -> list[Row]:
        """``read_after(seq)`` as ``Row`` tuples (a cold projection's fast path)."""
        check_session(user_id, session_id)
        check_after(seq, None)
        with self._lock:
            s = self._get(user_id, session_id)
            if s is None:
                return []
            head = s.head.seq
            i = max(0, bisect.bisect_right(s.starts, seq + 1) - 1)
            picked = [(c.first_seq, c.last_seq, c.data) for c in s.commits[i:]]
        return rows_after(picked, seq, head, where=slot_name(user_id, session_id, "log"))

    async def read_commits_after(
        self, user_id: str, session_id: str, seqs: Sequence[int]
    ) -> tuple[int, list[tuple[int, int, bytes] | None]]:
        """(head seq, per seq the raw commit holding ``seq + 1`` or None), in one read:
        ``read_after(seq, 1)`` undecoded for each (``batch.point_read`` decodes one), a
        cold load's segment reads."""
        check_session(user_id, session_id)
        for seq in seqs:
            check_after(seq, 1)
        with self._lock:
            s = self._get(user_id, session_id)
            if s is None:
                return 0, [None] * len(seqs)
            out: list[tuple[int, int, bytes] | None] = []
            for seq in seqs:
                i = max(0, bisect.bisect_right(s.starts, seq + 1) - 1)
                c = s.commits[i] if i < len(s.commits) else None
                out.append(None if c is None else (c.first_seq, c.last_seq, c.data))
            return s.head.seq, out

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)
        with self._lock:
            ids = sorted(k for k, s in self._sessions.get(user_id, {}).items() if s.head.seq)
        if cursor:
            ids = [i for i in ids if i > cursor]
        page = ids[:limit]
        return SessionPage(tuple(page), page[-1] if len(ids) > limit else None)

    async def delete(self, user_id: str, session_id: str) -> bool:
        check_session(user_id, session_id)
        with self._lock:
            return self._sessions.get(user_id, {}).pop(session_id, None) is not None

    async def aclose(self) -> None:
        return None

    # ---- for the conformance suite's crash checks: bytes behind the log's back
    def plant_orphan(
        self, user_id: str, session_id: str, batch_id: str, events: Sequence[LogEvent]
    ) -> None:
        """A commit written at ``head.seq + 1`` whose head never moved (a crash mid-commit)."""
        data, digest = encode_commit(events)
        with self._lock:
            s = self._make(user_id, session_id)
            first = s.head.seq + 1
            s.starts.append(first)
            s.commits.append(_Commit(first, first + len(events) - 1, batch_id, digest, data))
            s.by_batch[batch_id] = len(s.commits) - 1

    def plant_head(self, user_id: str, session_id: str, seq: int) -> None:
        """Move the head to ``seq`` without a commit (a head pointing at a missing commit)."""
        with self._lock:
            s = self._make(user_id, session_id)
            s.head = attrs.evolve(s.head, seq=seq)
