"""The one-statement path of the SQL session log on PostgreSQL: a warm ``commit`` or
``acquire`` is a single autocommit statement (one round trip, no BEGIN/COMMIT).

Why it stays exact without a second copy of ``plan_commit``: the statement writes only when
the head row, as it finally locks it, is one on which the rules have a single answer that
SQL can state, and it answers nothing otherwise; a statement that changed no row is
followed by the locked transaction (``sessionlog``), whose answer (the error, the duplicate,
the replaced orphan) is then the answer. For a commit that is: the writer's epoch and owner
are the head's, its lease is unexpired on the database clock, ``seq`` is ``expected_seq``,
no commit row holds the batch id's hash (no prior, no conflict) and none starts past
``expected_seq`` (no orphan to replace). For an acquire: the owner is not sealed and the
lease is free, expired or the owner's. On those heads ``plan_commit``/``plan_acquire``
decide exactly what the ``SET`` clauses write.

Why ``rev`` again: the statement's subqueries (seals, commits, the clock) read its snapshot,
while an ``UPDATE`` that waited for the head row re-checks its ``WHERE`` on the row's newest
version only (READ COMMITTED). ``rev = (the snapshot's rev)`` makes that newest version the
snapshot's own: any write under the head's lock since the snapshot (a racing commit, a seal,
an acquire, a delete) makes the statement change nothing. Two writers with the same expected
head: the second waits for the first's row lock, finds ``rev`` moved and falls back.
"""

from __future__ import annotations

from typing import Any

from hookagent.sessionlog import CHECKPOINT, LogEvent, LogHead
from sqlalchemy import Double, LargeBinary, bindparam, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import TextClause

from .errors import is_retryable
from .log_schema import LogTables

RETURNING = "RETURNING h.seq, h.epoch, h.owner, h.lease_until, h.commit_id, h.checkpoint_seq"
MAX_SEQ = 2**62  # a bigint with room for a batch: larger expected seqs go the long way


def checkpoint_in(events: Any, first: int) -> int:
    """The seq of the batch's last checkpoint event, 0 if it has none (as ``plan_commit``)."""
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if isinstance(e, LogEvent) and e.type == CHECKPOINT:
            return first + i
    return 0


def head_of(row: Any) -> LogHead:
    m = row._mapping
    return LogHead(
        int(m["seq"]),
        int(m["epoch"]),
        m["owner"],
        float(m["lease_until"]),
        m["commit_id"],
        int(m["checkpoint_seq"]),
    )


class FastStatements:
    """The PostgreSQL statements (built once per log; identifiers from the configuration,
    every value a bound parameter). ``clock``: the database's clock, or ``None`` to bind
    ``:now`` (a caller's clock)."""

    def __init__(self, tables: LogTables, prep: Any, clock: bool) -> None:
        heads, commits = prep.format_table(tables.heads), prep.format_table(tables.commits)
        seals = prep.format_table(tables.seals)
        now = (
            "extract(epoch from clock_timestamp())::float8"
            if clock
            else "CAST(:now AS DOUBLE PRECISION)"
        )
        self._common = f"""FROM (SELECT {now} AS t) n
    WHERE h.user_id = :u AND h.session_id = :s
      AND h.rev = (SELECT snap.rev FROM {heads} snap
                   WHERE snap.user_id = :u AND snap.session_id = :s)"""  # noqa: S608
        self._heads, self._commits, self._seals = heads, commits, seals
        self.heads, self.commits = heads, commits  # formatted, quoted
        self.acquire = self._acquire()
        self.commit = {finish: self._commit(finish) for finish in (False, True)}

    def _acquire(self) -> TextClause:
        sql = f"""UPDATE {self._heads} h
SET epoch = h.epoch + 1, owner = :o, lease_until = n.t + CAST(:lease AS DOUBLE PRECISION),
    rev = h.rev + 1
{self._common}
      AND (h.owner IS NULL OR h.owner = :o OR h.lease_until <= n.t)
      AND NOT EXISTS (SELECT 1 FROM {self._seals} x WHERE x.user_id = :u
                      AND x.session_id = :s AND x.owner_hash = :oh AND x.owner = :o)
{RETURNING}"""  # noqa: S608
        return text(sql).bindparams(bindparam("lease", type_=Double()))

    def _commit(self, finish: bool) -> TextClause:
        ending = ", owner = NULL, lease_until = 0" if finish else ""
        sealing = (
            f""",
sealed AS (
    INSERT INTO {self._seals} (user_id, session_id, owner_hash, owner)
    SELECT :u, :s, :oh, :o FROM upd ON CONFLICT DO NOTHING
)"""  # noqa: S608
            if finish
            else ""
        )
        sql = f"""WITH upd AS (
    UPDATE {self._heads} h
    SET seq = CAST(:last AS BIGINT), commit_id = :b,
        checkpoint_seq = CASE WHEN CAST(:cp AS BIGINT) > 0 THEN CAST(:cp AS BIGINT)
                         ELSE h.checkpoint_seq END,
        rev = h.rev + 1{ending}
    {self._common}
      AND h.epoch = CAST(:epoch AS BIGINT) AND h.owner = :o
      AND h.seq = CAST(:expected AS BIGINT) AND h.lease_until > n.t
      AND COALESCE((SELECT max(c.first_seq) FROM {self._commits} c WHERE c.user_id = :u
                    AND c.session_id = :s), 0) <= CAST(:expected AS BIGINT)
      -- max(): a backward step on the primary key; "NOT EXISTS first_seq > :expected"
      -- let the planner pick the batch index and filter every commit (O(history))
      AND NOT EXISTS (SELECT 1 FROM {self._commits} c WHERE c.user_id = :u
                      AND c.session_id = :s AND c.batch_hash = :bh)
    {RETURNING}
), ins AS (
    INSERT INTO {self._commits}
        (user_id, session_id, first_seq, last_seq, batch_hash, batch_id, digest, data)
    SELECT :u, :s, CAST(:first AS BIGINT), CAST(:last AS BIGINT), :bh, :b, :d,
        CAST(:data AS BYTEA) FROM upd
){sealing}
SELECT * FROM upd"""  # noqa: S608
        return text(sql).bindparams(bindparam("data", type_=LargeBinary()))


def run(conn: Connection, stmt: TextClause, params: dict[str, Any]) -> Row[Any] | None:
    """The statement's one row, or None when it changed nothing or the database refused it
    as a whole (a unique key met a row planted by hand, a deadlock victim): either way
    nothing was written, and the locked transaction gives the answer."""
    try:
        return conn.execute(stmt, params).first()
    except sa_exc.DBAPIError as exc:
        if isinstance(exc, sa_exc.IntegrityError) or is_retryable(exc):
            return None
        raise
