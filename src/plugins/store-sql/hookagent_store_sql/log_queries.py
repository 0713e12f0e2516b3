"""The session log's statements, built once per log with SQLAlchemy Core (every value a bound
parameter; table names only from the validated configuration).

The lock statement reads everything a decision needs in one round trip: the head row,
locked (``FOR UPDATE``), the database's clock, the prior commit of the batch id, the last
commit's first seq (an orphan past the head?) and whether an owner is sealed. Its subqueries
read the statement's snapshot, which may predate the lock it waited for (READ COMMITTED
re-reads only the locked row), so it also reads the head's ``rev`` through a subquery: every
write under the head's lock bumps ``rev``, and a locked ``rev`` that differs from the
snapshot's means the other columns may be stale: the transaction is simply run again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BindParameter,
    Double,
    LargeBinary,
    Select,
    bindparam,
    delete,
    exists,
    func,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.sql import ColumnElement, TextClause

from .log_schema import LogTables

HEAD_COLUMNS = ("seq", "epoch", "owner", "lease_until", "commit_id", "checkpoint_seq")


def db_clock(backend: str) -> ColumnElement[Any] | None:
    """The database's time in seconds since the epoch (None on SQLite: the host's clock)."""
    if backend == "postgresql":
        return literal_column("extract(epoch from clock_timestamp())::float8", Double())
    if backend == "mysql":
        return literal_column("UNIX_TIMESTAMP(NOW(6))", Double())
    return None


class LogQueries:
    def __init__(self, tables: LogTables, backend: str, prep: Any) -> None:
        self.t, self.backend = tables, backend
        h, c, s = tables.heads, tables.commits, tables.seals
        u: BindParameter[Any] = bindparam("u")
        sid: BindParameter[Any] = bindparam("s")
        self.clock = db_clock(backend)
        now = self.clock if self.clock is not None else literal_column("NULL")
        cols = [h.c[n] for n in HEAD_COLUMNS]
        where_h = (h.c.user_id == u, h.c.session_id == sid)
        where_c = (c.c.user_id == u, c.c.session_id == sid)
        snap = h.alias("snap")
        sealed = exists().where(
            s.c.user_id == u,
            s.c.session_id == sid,
            s.c.owner_hash == bindparam("oh"),
            s.c.owner == bindparam("o"),
        )
        prior = select(c.c.first_seq, c.c.last_seq, c.c.digest).where(
            *where_c, c.c.batch_hash == bindparam("bh"), c.c.batch_id == bindparam("b")
        )
        self.head = select(*cols).where(*where_h)
        lock = select(
            *cols,
            h.c.rev,
            select(snap.c.rev)
            .where(snap.c.user_id == u, snap.c.session_id == sid)
            .scalar_subquery()
            .label("snap_rev"),
            now.label("now"),
            sealed.label("sealed"),
        ).where(*where_h)
        of = h if backend == "postgresql" else None
        self.lock = lock.with_for_update(of=of)
        self.lock_commit = lock.add_columns(
            prior.with_only_columns(c.c.first_seq).scalar_subquery().label("prior_first"),
            prior.with_only_columns(c.c.last_seq).scalar_subquery().label("prior_last"),
            prior.with_only_columns(c.c.digest).scalar_subquery().label("prior_digest"),
            select(func.max(c.c.first_seq)).where(*where_c).scalar_subquery().label("last_first"),
        ).with_for_update(of=of)
        self.absent = select(
            now.label("now"), sealed.label("sealed")
        )  # acquire/seal of a new session
        values: dict[str, Any] = {n: bindparam(n) for n in (*HEAD_COLUMNS, "rev")}
        self.insert_head = h.insert().values(user_id=u, session_id=sid, **values)
        self.update_head = update(h).where(*where_h).values(**values)
        self.insert_seal = s.insert().values(
            user_id=u, session_id=sid, owner_hash=bindparam("oh"), owner=bindparam("o")
        )
        self.insert_commit = c.insert().values(
            user_id=u,
            session_id=sid,
            first_seq=bindparam("first"),
            last_seq=bindparam("last"),
            batch_hash=bindparam("bh"),
            batch_id=bindparam("b"),
            digest=bindparam("d"),
            data=bindparam("data", type_=c.c.data.type),
        )
        self.drop_orphans = delete(c).where(*where_c, c.c.first_seq > bindparam("head"))
        self.is_sealed = select(sealed)
        self.delete = [delete(h).where(*where_h), delete(c).where(*where_c)]
        self.delete.append(delete(s).where(s.c.user_id == u, s.c.session_id == sid))
        self.commit_cte: dict[bool, TextClause] = {}
        if backend == "postgresql":  # the writes as one statement: one round trip
            self.commit_cte = {f: self._pg_commit(prep, f) for f in (False, True)}

    def read(self, limit: int | None) -> Select[Any]:
        """The head's seq with the commits holding seqs past ``:after`` up to the head, in
        order (one statement, one snapshot); a head with none gives one row of NULLs."""
        h, c = self.t.heads, self.t.commits
        b = c.alias("b")  # the start of the commit holding after + 1 (``read_sql`` says why)
        start = (
            select(func.coalesce(func.max(b.c.first_seq), 0))
            .where(
                b.c.user_id == bindparam("u"),
                b.c.session_id == bindparam("s"),
                b.c.first_seq <= bindparam("after") + 1,
            )
            .scalar_subquery()
        )
        on = (
            (c.c.user_id == h.c.user_id)
            & (c.c.session_id == h.c.session_id)
            & (c.c.last_seq > bindparam("after"))
            & (c.c.first_seq <= h.c.seq)
            & (c.c.first_seq >= start)
        )
        stmt = (
            select(h.c.seq, c.c.first_seq, c.c.last_seq, c.c.data)
            .select_from(h.outerjoin(c, on))
            .where(h.c.user_id == bindparam("u"), h.c.session_id == bindparam("s"))
            .order_by(c.c.first_seq)
        )
        return stmt if limit is None else stmt.limit(limit)  # a commit holds >= 1 event

    def list_sessions(self, cursor: str | None, limit: int) -> Select[Any]:
        h = self.t.heads
        stmt = select(h.c.session_id).where(h.c.user_id == bindparam("u"), h.c.seq > 0)
        if cursor:
            stmt = stmt.where(h.c.session_id > bindparam("cursor"))
        return stmt.order_by(h.c.session_id).limit(limit)

    def _pg_commit(self, prep: Any, seal: bool) -> TextClause:
        t = self.t
        heads, commits = prep.format_table(t.heads), prep.format_table(t.commits)
        seals = prep.format_table(t.seals)
        sealing = (
            f""", sealed AS (
    INSERT INTO {seals} (user_id, session_id, owner_hash, owner)
    VALUES (:u, :s, :oh, :o) ON CONFLICT DO NOTHING RETURNING 1
)"""  # noqa: S608
            if seal
            else ""
        )
        sql = f"""WITH ins AS (
    INSERT INTO {commits}
        (user_id, session_id, first_seq, last_seq, batch_hash, batch_id, digest, data)
    VALUES (:u, :s, :first, :last, :bh, :b, :d, :data) RETURNING 1
){sealing}
UPDATE {heads} SET seq = :seq, epoch = :epoch, owner = :owner, lease_until = :lease_until,
    commit_id = :commit_id, checkpoint_seq = :checkpoint_seq, rev = :rev
WHERE user_id = :u AND session_id = :s AND EXISTS (SELECT 1 FROM ins)"""  # noqa: S608
        return text(sql).bindparams(bindparam("data", type_=LargeBinary()))
