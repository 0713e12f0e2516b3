"""The read side of ``SqlSessionLog``: one statement each, no lock taken.

``read_after`` never returns an event past the head it read in the same statement, and
fails closed (``LogCorrupt``) on a gap or on a head whose commit row is missing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hookagent.errors import LogCorrupt
from hookagent.sessionlog import LogEvent, LogHead, SessionPage
from hookagent.sessionlog import Row as EventRow
from hookagent.sessionlog.batch import decode_batch, point_read, rows_after
from hookagent.sessionlog.rules import check_after, check_owner, check_session
from hookagent.store.ids import check_cursor, check_id, check_page_limit, slot_name
from sqlalchemy.engine import Row

from .log_queries import HEAD_COLUMNS, LogQueries
from .log_schema import id_hash
from .retry import Retrying


def _head(row: Row[Any] | None) -> LogHead:
    if row is None:
        return LogHead()
    seq, epoch, owner, lease, commit_id, checkpoint = (row._mapping[n] for n in HEAD_COLUMNS)
    return LogHead(int(seq), int(epoch), owner, float(lease), commit_id, int(checkpoint))


def _commit(first: Any, last: Any, data: Any, where: str) -> tuple[int, int, bytes]:
    if type(data) is not bytes:
        data = bytes(data) if isinstance(data, (bytearray, memoryview)) else _bad(where)
    return int(first), int(last), data


def _bad(where: str) -> Any:
    raise LogCorrupt(f"{where}: a commit row's data is not bytes")


class LogReads:
    """Mixed into ``SqlSessionLog``, which provides ``_ready``, ``_retry`` and ``_what``."""

    _retry: Retrying

    async def _ready(self) -> LogQueries:
        raise NotImplementedError

    def _raw_reader(self) -> Callable[..., Awaitable[list[Any]]] | None:
        """The driver's own read of ``LogQueries.read(None)`` (after ``_ready``), if any:
        ``(user_id, session_id, after, one=False)``, ``one`` for ``read(1)``."""
        return None

    @staticmethod
    def _what(op: str, user_id: str, session_id: str) -> str:
        return f"log {op} {slot_name(user_id, session_id, 'log')}"

    async def head(self, user_id: str, session_id: str) -> LogHead:
        check_session(user_id, session_id)
        q = await self._ready()
        params = {"u": user_id, "s": session_id}
        what = self._what("head", user_id, session_id)
        return await self._retry.read(what, lambda c: _head(c.execute(q.head, params).first()))

    async def is_sealed(self, user_id: str, session_id: str, owner: str) -> bool:
        check_session(user_id, session_id)
        check_owner(owner)
        q = await self._ready()
        params = {"u": user_id, "s": session_id, "oh": id_hash(owner), "o": owner}
        what = self._what("is_sealed", user_id, session_id)
        return await self._retry.read(what, lambda c: bool(c.execute(q.is_sealed, params).scalar()))

    async def read_after(
        self, user_id: str, session_id: str, seq: int, limit: int | None = None
    ) -> list[LogEvent]:
        check_session(user_id, session_id)
        check_after(seq, limit)
        q = await self._ready()
        if limit == 1 and self._raw_reader() is not None:  # a point read (a cold load's)
            return await self._read_one(user_id, session_id, seq)
        stmt, params = q.read(limit), {"u": user_id, "s": session_id, "after": seq}
        what = self._what("read_after", user_id, session_id)
        rows = await self._retry.read(what, lambda c: c.execute(stmt, params).all())
        if not rows:
            return []
        head = int(rows[0].seq)
        where = slot_name(user_id, session_id, "log")
        out: list[LogEvent] = []
        picked = [r for r in rows if r.first_seq is not None]
        expect = min(int(picked[0].first_seq), seq + 1) if picked else seq + 1
        for r in picked:
            if r.first_seq != expect:
                raise LogCorrupt(f"{where}: seqs {expect}..{r.first_seq - 1} are missing")
            expect = int(r.last_seq) + 1
            for e in decode_batch(bytes(r.data), int(r.first_seq), where=where):
                if seq < e.seq <= head:
                    out.append(e)
                    if limit is not None and len(out) >= limit:
                        return out
        short = limit is None or len(out) < limit
        if short and head > seq and (not out or out[-1].seq != head):
            raise LogCorrupt(f"{where}: the head is at seq {head} but its commit is missing")
        return out

    async def _read_one(self, user_id: str, session_id: str, seq: int) -> list[LogEvent]:
        """``read_after(seq, 1)`` on the driver's own call: the commit holding ``seq + 1``,
        with ``read_after``'s checks (``point_read``)."""
        head, commits = await self.read_commits_after(user_id, session_id, [seq])
        return point_read(head, commits[0], seq, where=slot_name(user_id, session_id, "log"))

    def _raw_read_at(self) -> Callable[..., Awaitable[list[Any]]] | None:
        """The driver's one-statement read of many point reads (PostgreSQL), if any."""
        return None

    async def read_commits_after(
        self, user_id: str, session_id: str, seqs: Sequence[int]
    ) -> tuple[int, list[tuple[int, int, bytes] | None]]:
        """``read_after(seq, 1)`` undecoded for each seq (``point_read`` decodes one): the
        head's seq and the commit holding ``seq + 1``; one statement on PostgreSQL, else
        the point read's statement per seq (the head: the first one's)."""
        check_session(user_id, session_id)
        for seq in seqs:
            check_after(seq, 1)
        q = await self._ready()
        what = self._what("read_after", user_id, session_id)
        where = slot_name(user_id, session_id, "log")
        if not seqs:
            return (await self.head(user_id, session_id)).seq, []
        many = self._raw_read_at()
        if many is not None:
            rows: list[Any] = await self._retry.read_with(
                what, lambda: many(user_id, session_id, list(seqs))
            )
            out: list[tuple[int, int, bytes] | None] = [None] * len(seqs)
            for _, i, first, last, data in rows:
                if first is not None:
                    out[int(i) - 1] = _commit(first, last, data, where)
            return (int(rows[0][0]) if rows else 0), out
        head, out = None, []
        for seq in seqs:
            got = await self._point_rows(q, what, user_id, session_id, seq)
            if not got:
                return 0, [None] * len(seqs)  # no head: a log never written (or deleted)
            head = int(got[0][0]) if head is None else head
            first, last, data = got[0][1:]
            out.append(None if first is None else _commit(first, last, data, where))
        return (0 if head is None else head), out

    async def _point_rows(
        self, q: LogQueries, what: str, user_id: str, session_id: str, seq: int
    ) -> list[tuple[Any, ...]]:
        """The point read's (head, first, last, data) rows for ``seq`` (none: no head)."""
        reader = self._raw_reader()
        if reader is not None:
            raw: list[Any] = await self._retry.read_with(
                what, lambda: reader(user_id, session_id, seq, True)
            )
            return [tuple(r) for r in raw]
        stmt, params = q.read(1), {"u": user_id, "s": session_id, "after": seq}
        found = await self._retry.read(what, lambda c: c.execute(stmt, params).all())
        return [(r.seq, r.first_seq, r.last_seq, r.data) for r in found]

    async def read_rows_after(self, user_id: str, session_id: str, seq: int) -> list[EventRow]:
        """``read_after(seq)`` as ``Row`` tuples: the same statement and checks (a cold
        projection's fast path, no envelope objects)."""
        check_session(user_id, session_id)
        check_after(seq, None)
        q = await self._ready()
        what = self._what("read_after", user_id, session_id)
        where = slot_name(user_id, session_id, "log")
        reader = self._raw_reader()
        if reader is not None:  # the driver's own tuples: (head, first, last, data)
            raw: list[Any] = await self._retry.read_with(
                what, lambda: reader(user_id, session_id, seq)
            )
            if not raw:
                return []
            if raw[0][1] is None:  # the head alone (the outer join matched no commit)
                return rows_after((), seq, int(raw[0][0]), where=where)
            commits = [(f, n, d) if type(d) is bytes else _bad(where) for _, f, n, d in raw]
            return rows_after(commits, seq, int(raw[0][0]), where=where)
        stmt, params = q.read(None), {"u": user_id, "s": session_id, "after": seq}
        rows = await self._retry.read(what, lambda c: c.execute(stmt, params).all())
        if not rows:
            return []
        commits = [
            (int(r.first_seq), int(r.last_seq), bytes(r.data))
            for r in rows
            if r.first_seq is not None
        ]
        return rows_after(commits, seq, int(rows[0].seq), where=where)

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)
        q = await self._ready()
        stmt, params = q.list_sessions(cursor, limit + 1), {"u": user_id, "cursor": cursor}
        ids = await self._retry.read(
            "log list_session_ids", lambda c: [r[0] for r in c.execute(stmt, params)]
        )
        page = ids[:limit]
        return SessionPage(tuple(page), page[-1] if len(ids) > limit else None)
