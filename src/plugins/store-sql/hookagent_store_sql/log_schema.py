"""The session log's tables (migration 3), next to the state store's, with the same prefix.

Why hashes in two keys: an index holds at most two ids of up to 256 characters (2 KiB in
utf8mb4) next to fixed-size columns, under MySQL's 3072-byte and PostgreSQL's 2704-byte key
limits, so the batch-id and sealed-owner keys use a digest of the id (``id_hash``) and keep
the id itself in a plain column.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Index,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    TypeDecorator,
    func,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from .config import TableNames
from .schema import HASH_LENGTH, Flavor, _table_kw

DIGEST_LENGTH = 64


def id_hash(value: str) -> str:
    """128-bit hex digest of an id (batch_id, owner): the short form a unique key holds."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:HASH_LENGTH]


owner_hash = functools.lru_cache(maxsize=1024)(id_hash)
"""``id_hash`` of an owner (a run id), made once per run instead of once per operation."""


class MysqlBlob(TypeDecorator[bytes]):
    """LONGBLOB (a commit may be 8 MiB; BLOB holds 64 KiB) whose values are sent as base64
    text through ``FROM_BASE64``: aiomysql 0.3 cannot bind ``bytes`` with PyMySQL >= 1.2
    (it imports a converter PyMySQL removed), and base64 keeps an 8 MiB commit under the
    default 16 MiB ``max_allowed_packet`` where hex would not."""

    impl = mysql.LONGBLOB
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Any:  # the text alone, not LONGBLOB's
        def process(value: bytes | None) -> str | None:
            return None if value is None else base64.b64encode(value).decode("ascii")

        return process

    def bind_expression(self, bindvalue: Any) -> Any:
        return func.from_base64(bindvalue, type_=mysql.LONGBLOB())


def _blob(flavor: Flavor) -> TypeEngine[bytes]:
    if flavor.name in ("mysql", "mariadb"):
        return MysqlBlob()
    return LargeBinary()


def read_sql(heads: str, commits: str, marks: tuple[str, str, str], *, one: bool = False) -> str:
    """``LogQueries.read(None)`` (``one``: ``read(1)``, the commit holding ``after + 1``) as
    plain SQL for the drivers' own calls (tables formatted and quoted by the dialect;
    ``marks``: the user, session and after parameters).

    ``last_seq > after`` alone is not a bound the primary key ``(user_id, session_id,
    first_seq)`` can seek on: every commit of the session was read and filtered (2 ms at
    4,000 commits, paid by each of a cold load's ~16 segment reads). The commit holding
    ``after + 1`` is the last one starting at or before it (commits are contiguous and do
    not overlap), so ``first_seq >= that start`` is the same set, found by two seeks; a
    point read (``one``) wants that commit alone: ``first_seq = that start`` (a range would
    still read and sort every commit after it). If that commit ends before ``after + 1``
    (a gap), the point read finds none and the caller's head check fails closed."""
    u, s, after = marks
    return f"""SELECT h.seq, c.first_seq, c.last_seq, c.data
FROM {heads} h LEFT OUTER JOIN {commits} c
  ON c.user_id = h.user_id AND c.session_id = h.session_id AND c.last_seq > {after}
  AND c.first_seq <= h.seq AND c.first_seq {"=" if one else ">="} (
    SELECT COALESCE(MAX(b.first_seq), 0) FROM {commits} b
    WHERE b.user_id = {u} AND b.session_id = {s} AND b.first_seq <= {after} + 1)
WHERE h.user_id = {u} AND h.session_id = {s}
ORDER BY c.first_seq{" LIMIT 1" if one else ""}"""  # noqa: S608


def read_at_sql(heads: str, commits: str) -> str:
    """PostgreSQL: ``read_sql(one=True)`` for each seq of the array ``$3`` in one statement
    (a cold load's ~16 history segments: one round trip, not 16). Per seq, in its order
    (``i``), the last commit starting at or before ``after + 1``, if it reaches past
    ``after`` and starts at or before the head: the point read's commit.

    Why ``LATERAL`` with ``ORDER BY first_seq DESC LIMIT 1``, not ``read_sql``'s join: on
    tables never analyzed (just created and filled) the planner takes the batch index
    ``(user_id, session_id, batch_hash)`` for the join's commit side, whose first columns are
    the session's too, and reads every commit of the session (3.6 ms at 4,046 commits);
    an ordered ``LIMIT 1`` on the primary key's order is a backward seek whatever the
    statistics (``test_sessionlog_read_plan.py`` checks both on fresh tables). The seqs
    are sent as one text of comma-separated ints (``read_at_param``): asyncpg introspects an
    array parameter's type on every new connection, ~10 ms, paid by a cold load's first
    read."""
    return f"""SELECT h.seq, x.i, c.first_seq, c.last_seq, c.data
FROM {heads} h CROSS JOIN unnest(string_to_array($3::text, ',')::bigint[])
  WITH ORDINALITY AS x(after, i)
LEFT JOIN LATERAL (
  SELECT b.first_seq, b.last_seq, b.data FROM {commits} b
  WHERE b.user_id = $1 AND b.session_id = $2 AND b.first_seq <= x.after + 1
  ORDER BY b.first_seq DESC LIMIT 1) c ON c.last_seq > x.after AND c.first_seq <= h.seq
WHERE h.user_id = $1 AND h.session_id = $2
ORDER BY x.i"""  # noqa: S608


def read_at_param(afters: list[int]) -> str:
    """``read_at_sql``'s ``$3``: the seqs as text (only ints: nothing else reaches SQL)."""
    return ",".join(str(int(a)) for a in afters)


def read_range_pg_sql(heads: str, commits: str) -> str:
    """PostgreSQL: ``read_sql(one=False)`` (the commits from the one holding ``$3 + 1`` to
    the head) in a form that seeks on the primary key whatever the statistics (see
    ``read_at_sql``): the commits are an ordered ``LATERAL`` range of it."""
    return f"""SELECT h.seq, c.first_seq, c.last_seq, c.data
FROM {heads} h LEFT JOIN LATERAL (
  SELECT b.first_seq, b.last_seq, b.data FROM {commits} b
  WHERE b.user_id = $1 AND b.session_id = $2 AND b.last_seq > $3 AND b.first_seq <= h.seq
    AND b.first_seq >= COALESCE((
      SELECT a.first_seq FROM {commits} a
      WHERE a.user_id = $1 AND a.session_id = $2 AND a.first_seq <= $3 + 1
      ORDER BY a.first_seq DESC LIMIT 1), 0)
  ORDER BY b.first_seq) c ON true
WHERE h.user_id = $1 AND h.session_id = $2
ORDER BY c.first_seq"""  # noqa: S608


class LogTables:
    """``<p>log_heads``, ``<p>log_commits``, ``<p>log_seals`` (docs/stores/sql.md)."""

    def __init__(self, names: TableNames, flavor: Flavor) -> None:
        self.names, self.flavor = names, flavor
        self.metadata = MetaData(schema=names.schema)
        f, kw, p = flavor, _table_kw(flavor), names.prefix
        self.heads = Table(
            names.log_heads,
            self.metadata,
            Column("user_id", f.id(), nullable=False),
            Column("session_id", f.id(), nullable=False),
            Column("seq", BigInteger, nullable=False),
            Column("epoch", BigInteger, nullable=False),
            Column("owner", f.id(), nullable=True),
            Column("lease_until", Double(), nullable=False),
            Column("commit_id", f.id(), nullable=True),
            Column("checkpoint_seq", BigInteger, nullable=False),
            # bumped by every write under the head's lock (random at creation): see log_queries
            Column("rev", BigInteger, nullable=False),
            PrimaryKeyConstraint("user_id", "session_id", name=f"{p}log_heads_pk"),
            **kw,
        )
        self.commits = Table(
            names.log_commits,
            self.metadata,
            Column("user_id", f.id(), nullable=False),
            Column("session_id", f.id(), nullable=False),
            Column("first_seq", BigInteger, nullable=False),
            Column("last_seq", BigInteger, nullable=False),
            Column("batch_hash", f.ascii(HASH_LENGTH), nullable=False),
            Column("batch_id", f.id(), nullable=False),
            Column("digest", f.ascii(DIGEST_LENGTH), nullable=False),
            Column("data", _blob(f), nullable=False),
            PrimaryKeyConstraint("user_id", "session_id", "first_seq", name=f"{p}log_commits_pk"),
            Index(f"{p}log_commits_batch", "user_id", "session_id", "batch_hash", unique=True),
            **kw,
        )
        self.seals = Table(
            names.log_seals,
            self.metadata,
            Column("user_id", f.id(), nullable=False),
            Column("session_id", f.id(), nullable=False),
            Column("owner_hash", f.ascii(HASH_LENGTH), nullable=False),
            Column("owner", f.id(), nullable=False),
            PrimaryKeyConstraint("user_id", "session_id", "owner_hash", name=f"{p}log_seals_pk"),
            **kw,
        )

    def all(self) -> list[Any]:
        return list(self.metadata.sorted_tables)
