"""The SQL statements, built once per store with SQLAlchemy Core: every value is a bound
parameter, table names come from the validated configuration only."""

from __future__ import annotations

from typing import Any

from hookagent.errors import CorruptState, Fenced
from hookagent.store.ids import FENCE_EPOCH_LIMIT
from sqlalchemy import (
    BigInteger,
    BindParameter,
    Integer,
    and_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    literal_column,
    null,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement, Select

from .errors import is_duplicate
from .schema import Tables


def head_match(backend: str, head: Any, token: BindParameter[Any]) -> ColumnElement[bool]:
    """The stored head is the one whose ``verify.head_token`` is ``token``: on SQLite the
    text itself, elsewhere its MD5 computed by the server (of the UTF-8 bytes on PostgreSQL
    whatever the database encoding, as the client computes it)."""
    if backend == "sqlite":
        return head == token  # type: ignore[no-any-return]
    if backend == "postgresql":
        return func.md5(func.convert_to(head, literal_column("'UTF8'"))) == token
    return func.md5(head) == token


class RetryTransaction(Exception):
    """Raised inside a write when a race means the transaction must simply run again."""


class Queries:
    def __init__(self, tables: Tables, backend: str) -> None:
        self.t, self.backend = tables, backend
        s, m, c = tables.slots, tables.messages, tables.chunks
        u: BindParameter[Any] = bindparam("u")
        h: BindParameter[Any] = bindparam("h")
        head = select(
            literal(-1, Integer).label("seq"),
            s.c.version,
            s.c.generation,
            s.c.message_count,
            s.c.head.label("body"),
        ).where(s.c.user_id == u, s.c.slot_hash == h)
        tail = select(
            m.c.seq,
            cast(null(), BigInteger),
            cast(null(), BigInteger),
            cast(null(), Integer),
            m.c.body,
        ).where(m.c.user_id == u, m.c.slot_hash == h, m.c.seq >= bindparam("start"))
        # the chunks past what the caller holds (one may straddle ``start``); the count
        # column carries a chunk's ``n`` (NULL on a message row)
        chunks = select(
            c.c.end_seq, cast(null(), BigInteger), cast(null(), BigInteger), c.c.n, c.c.body
        ).where(c.c.user_id == u, c.c.slot_hash == h, c.c.end_seq > bindparam("start"))
        # one statement = one snapshot on every dialect: the head and its tail agree. No join
        # and no ORDER BY: the rows come in primary-key order (the store checks, and sorts if
        # a database ever does otherwise); a sort of the whole history cost more than the
        # read. ``seq >= :start`` is a plain index range; a reader whose cached generation
        # turns out stale simply asks again from 0.
        self.load = union_all(head, tail, chunks)
        self.exists = select(literal(1)).where(s.c.user_id == u, s.c.slot_hash == h)
        # the compare-and-set: it also proves generation, count and head are what the caller
        # read (checked, decoded) or wrote itself: nothing unread is ever overwritten
        self.cas_slot = (
            update(s)
            .where(s.c.user_id == u, s.c.slot_hash == h, s.c.version == bindparam("expected"))
            .where(s.c.generation == bindparam("gen"), s.c.message_count == bindparam("count"))
            .where(head_match(backend, s.c.head, bindparam("old_head")))
            .values(
                version=bindparam("new_version"),
                generation=bindparam("new_generation"),
                message_count=bindparam("new_count"),
                head=bindparam("new_head"),
                updated_at=bindparam("now"),
            )
        )
        self.insert_chunks = insert(c)
        # a rewrite from ``start``: where the chunk holding ``start`` begins (under the slot
        # row's lock, taken by the compare-and-set), so it is rewritten whole
        self.straddle = select(func.min(c.c.end_seq - c.c.n)).where(
            c.c.user_id == u, c.c.slot_hash == h, c.c.end_seq > bindparam("start")
        )
        self.delete_chunks_from = delete(c).where(
            c.c.user_id == u, c.c.slot_hash == h, c.c.end_seq > bindparam("start")
        )
        self.fence_upsert = self._fence_upsert() if backend != "mysql" else None
        self.delete_from = delete(m).where(
            m.c.user_id == u, m.c.slot_hash == h, m.c.seq >= bindparam("start")
        )
        self.delete_slot = delete(s).where(s.c.user_id == u, s.c.slot_hash == h)
        sess: BindParameter[Any] = bindparam("s")
        keys = select(s.c.slot_hash).where(s.c.user_id == u, s.c.session_id == sess)
        self.session_slots = keys.with_for_update() if backend != "sqlite" else keys
        self.delete_session_messages = delete(m).where(
            m.c.user_id == u, m.c.slot_hash.in_(bindparam("hashes", expanding=True))
        )
        self.delete_session_chunks = delete(c).where(
            c.c.user_id == u, c.c.slot_hash.in_(bindparam("hashes", expanding=True))
        )
        self.delete_session_slots = delete(s).where(s.c.user_id == u, s.c.session_id == sess)

    def list_sessions(self, user_id: str, cursor: str | None, limit: int) -> Select[Any]:
        s = self.t.slots
        q = select(s.c.session_id).distinct().where(s.c.user_id == user_id)
        if cursor is not None:
            q = q.where(s.c.session_id > cursor)
        return q.order_by(s.c.session_id).limit(limit)

    def _fence_upsert(self) -> Any:
        """Record the epoch unless a newer one (or the same one of another owner) is stored."""
        f = self.t.fences
        ins = (postgresql.insert if self.backend == "postgresql" else sqlite.insert)(f)
        ins = ins.values(
            user_id=bindparam("u"),
            session_id=bindparam("s"),
            epoch=bindparam("epoch"),
            owner=bindparam("owner"),
            updated_at=bindparam("now"),
        )
        return ins.on_conflict_do_update(
            index_elements=[f.c.user_id, f.c.session_id],
            set_={
                "epoch": ins.excluded.epoch,
                "owner": ins.excluded.owner,
                "updated_at": ins.excluded.updated_at,
            },
            where=and_(
                f.c.epoch >= 0,  # a negative stored epoch is reported (corrupt), not replaced
                or_(
                    f.c.epoch < ins.excluded.epoch,
                    and_(f.c.epoch == ins.excluded.epoch, f.c.owner == ins.excluded.owner),
                ),
            ),
        )

    def create_slot(self, conn: Connection, values: dict[str, Any]) -> bool:
        """INSERT the slot row; False if it already exists (never a phantom success)."""
        s = self.t.slots
        if self.backend in ("postgresql", "sqlite"):
            ins = (postgresql.insert if self.backend == "postgresql" else sqlite.insert)(s)
            stmt = ins.values(**values).on_conflict_do_nothing(
                index_elements=[s.c.user_id, s.c.slot_hash]
            )
            return conn.execute(stmt).rowcount == 1
        try:
            conn.execute(insert(s).values(**values))
        except Exception as exc:
            if is_duplicate(exc):
                return False
            raise
        return True

    def check_fence(
        self, conn: Connection, u: str, sid: str, epoch: int, owner: str, now: Any
    ) -> None:
        """Record the fence as newest, or raise ``Fenced`` if a newer one was seen."""
        f = self.t.fences
        row = {"user_id": u, "session_id": sid, "epoch": epoch, "owner": owner, "updated_at": now}
        if self.fence_upsert is not None:
            params = {"u": u, "s": sid, "epoch": epoch, "owner": owner, "now": now}
            if conn.execute(self.fence_upsert, params).rowcount == 1:
                return
        else:
            got = (
                conn.execute(
                    select(f.c.epoch, f.c.owner)
                    .where(f.c.user_id == u, f.c.session_id == sid)
                    .with_for_update()
                )
            ).first()
            if got is None:
                try:
                    conn.execute(insert(f).values(**row))
                except Exception as exc:
                    if is_duplicate(exc):
                        raise RetryTransaction from exc
                    raise
                return
            _check_epoch(got.epoch, u, sid)
            if got.epoch < epoch or (got.epoch == epoch and got.owner == owner):
                conn.execute(
                    update(f)
                    .where(f.c.user_id == u, f.c.session_id == sid)
                    .values(epoch=epoch, owner=owner, updated_at=now)
                )
                return
        newest = (
            conn.execute(
                select(f.c.epoch, f.c.owner).where(f.c.user_id == u, f.c.session_id == sid)
            )
        ).first()
        if newest is not None:
            _check_epoch(newest.epoch, u, sid)
        raise Fenced(
            f"lease epoch {epoch} of {owner!r} is stale: the store has seen epoch "
            f"{newest.epoch if newest else '?'} of {newest.owner if newest else '?'!r} "
            f"on user_id={u!r} session_id={sid!r}"
        )


def _check_epoch(epoch: object, user_id: str, session_id: str) -> None:
    """A stored epoch no valid fence can pass (or none at all) is corruption, not a fence."""
    if type(epoch) is not int or not 0 <= epoch < FENCE_EPOCH_LIMIT:
        raise CorruptState(
            f"user_id={user_id!r} session_id={session_id!r}: the stored fence epoch "
            f"{epoch!r} is out of range (0 .. {FENCE_EPOCH_LIMIT - 1})"
        )
