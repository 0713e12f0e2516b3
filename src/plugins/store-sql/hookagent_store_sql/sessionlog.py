"""``SqlSessionLog``: the session log (``hookagent.sessionlog.SessionLog``) on PostgreSQL,
MySQL/MariaDB or SQLite, in the store's database (migration 3's tables, same prefix).

Every change is one transaction that first locks the session's head row (``SELECT ... FOR
UPDATE``; SQLite: ``BEGIN IMMEDIATE``), then lets ``hookagent.sessionlog.rules`` decide on
what it read, then writes what the rules said: the commit row before the head moves, in the
same transaction, so an orphan cannot even be left by a crash (one planted by hand is
invisible and replaced). Reads are one statement each. Leases run on the database's clock
on PostgreSQL and MariaDB (no skew between client hosts), on the host's on SQLite
(docs/stores/sql.md, "Session log on SQL").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import attrs
from hookagent.errors import LogCorrupt, StoreConfigurationError, StoreUnavailable
from hookagent.sessionlog import CommitResult, LogEvent, LogHead, LogWriter
from hookagent.sessionlog.rules import (
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
from hookagent.store.ids import slot_name
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncEngine

from .config import TableNames, backend_of, install_sqlite_pragmas, make_engine, split_url
from .errors import TRANSLATED, is_duplicate
from .log_fast import MAX_SEQ, FastStatements, checkpoint_in, head_of
from .log_fast import run as run_fast
from .log_pg import PgLogDirect
from .log_queries import HEAD_COLUMNS, LogQueries
from .log_reads import LogReads, _head
from .log_schema import LogTables, id_hash, owner_hash
from .log_sqlite import LeaseRunner, SqliteLogFast
from .migrations import flavor_of
from .pg_direct import usable
from .prepare import prepare_schema
from .queries import RetryTransaction
from .retry import Retrying
from .runner import AsyncRunner, ThreadRunner
from .save import new_generation
from .sqlite import database_key


def _values(head: LogHead, rev: int) -> dict[str, Any]:
    return {**{n: getattr(head, n) for n in HEAD_COLUMNS}, "rev": rev}


class SqlSessionLog(LogReads):
    """The SQL session log; options as ``SQLAgentStateStore``'s (URL or ``AsyncEngine``,
    ``table_prefix``, ``schema``, ``auto_migrate``, SQLite and retry options) plus ``clock``:
    None (the database's clock; the host's on SQLite) or a callable giving seconds."""

    def __init__(
        self,
        engine: AsyncEngine | str,
        *,
        table_prefix: str | None = None,
        schema: str | None = None,
        auto_migrate: bool | None = None,
        clock: Callable[[], float] | None = None,
        sqlite_busy_timeout: float = 5.0,
        sqlite_synchronous: str = "FULL",
        retry_deadline: float = 10.0,
        retry_disconnects: bool = True,
        **engine_options: Any,
    ) -> None:
        url_opts: dict[str, Any] = {}
        if isinstance(engine, str):
            url, url_opts = split_url(engine)
            self._engine = make_engine(
                url,
                sqlite_busy_timeout=sqlite_busy_timeout,
                sqlite_synchronous=sqlite_synchronous,
                **engine_options,
            )
            self._owns_engine = True
        elif isinstance(engine, AsyncEngine):
            if engine_options:
                raise StoreConfigurationError("engine options apply only when a URL is given")
            self._engine, self._owns_engine = engine, False
            if engine.dialect.name == "sqlite":
                install_sqlite_pragmas(
                    engine, busy_timeout=sqlite_busy_timeout, synchronous=sqlite_synchronous
                )
        else:
            raise StoreConfigurationError(
                f"expected an SQLAlchemy URL or AsyncEngine, got {type(engine).__name__}"
            )
        if clock is not None and not callable(clock):
            raise StoreConfigurationError(f"clock must be None or a callable, got {clock!r}")
        self._backend = backend_of(self._engine)
        self.locality = "host" if self._backend == "sqlite" else "shared"
        prefix = table_prefix if table_prefix is not None else url_opts.get("table_prefix")
        self._names = TableNames(
            prefix if prefix is not None else TableNames().prefix,
            schema if schema is not None else url_opts.get("schema"),
        )
        if self._backend == "sqlite" and self._names.schema is not None:
            raise StoreConfigurationError("SQLite has no schemas: use table_prefix instead")
        auto = auto_migrate if auto_migrate is not None else url_opts.get("auto_migrate", True)
        self._auto_migrate = bool(auto)
        self._clock = clock if clock is not None or self._backend != "sqlite" else time.time
        self._sqlite_key = None
        if self._backend == "sqlite":
            database = self._engine.url.database
            if not database or database == ":memory:":
                raise StoreConfigurationError("the SQL log needs an SQLite file, not :memory:")
            self._sqlite_key = database_key(database)
        read_engine = (
            self._engine.execution_options(isolation_level="AUTOCOMMIT")
            if self._backend == "postgresql"
            else self._engine
        )
        self._runner: AsyncRunner | ThreadRunner
        if self._sqlite_key is not None and self._owns_engine:
            self._runner = ThreadRunner(
                self._engine.url,
                self._sqlite_key,
                busy_timeout=sqlite_busy_timeout,
                synchronous=sqlite_synchronous,
            )
        else:
            self._runner = AsyncRunner(self._engine, read_engine, self._sqlite_key)
        self._retry = Retrying(self._runner, retry_deadline, retry_disconnects)
        self._retry_deadline, self._retry_disconnects = retry_deadline, retry_disconnects
        self._lease_retry = self._retry  # SQLite's: lease changes unsynced (log_sqlite)
        self._q: LogQueries | None = None
        self._fast: FastStatements | None = None  # PostgreSQL's one-statement path
        self._lite: SqliteLogFast | None = None  # SQLite's one-transaction path
        self._pg: PgLogDirect | None = None  # the one-statement path sent by asyncpg
        self._sync = sqlite_synchronous
        self._ready_lock: asyncio.Lock | None = None
        self._closed = False

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SqlSessionLog({url!r}, table_prefix={self._names.prefix!r})"

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    @property
    def tables(self) -> LogTables:
        return LogTables(self._names, flavor_of(self._engine.dialect))

    # ------------------------------------------------------------------ plumbing

    async def _ready(self) -> LogQueries:
        if self._q is not None:
            return self._q
        if self._closed:
            raise StoreUnavailable("the SQL session log is closed")
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if self._q is None:
                await self._retry.busy(self._prepare, "prepare")
        assert self._q is not None
        return self._q

    async def _prepare(self) -> None:
        await prepare_schema(
            self._engine,
            self._backend,
            self._names,
            self._sqlite_key,
            auto_migrate=self._auto_migrate,
            what="the SQL session log",
            opened_with="open the log with auto_migrate=True",
        )
        prep = self._engine.dialect.identifier_preparer
        if self._backend == "postgresql":
            self._fast = FastStatements(self.tables, prep, clock=self._clock is None)
            if usable(self._engine):
                self._pg = PgLogDirect(self._engine, self._fast)
        if isinstance(self._runner, ThreadRunner):
            self._lite = SqliteLogFast(self._runner, self.tables, prep, self._sync)
            lease = cast(ThreadRunner, LeaseRunner(self._runner, self._lite))  # write() only
            self._lease_retry = Retrying(lease, self._retry_deadline, self._retry_disconnects)
        self._q = LogQueries(self.tables, self._backend, prep)

    async def open(self) -> SqlSessionLog:
        """Check (or run) the migrations and make the first connection now; a failure is
        left for the first operation to report. Returns self."""
        try:
            q = await self._ready()
            if isinstance(self._runner, ThreadRunner):
                engine = self._runner.engine
                await self._runner.call(lambda: self._warm(engine.connect(), q))
            else:
                async with self._engine.connect() as conn:
                    await conn.run_sync(lambda c: self._warm(c, q))
        except (StoreUnavailable, StoreConfigurationError, *TRANSLATED):
            pass
        return self

    def _warm(self, conn: Connection, q: LogQueries) -> None:
        """Run the lock and read statements once for no session (an empty session id never
        names one), in a transaction rolled back: the engine's compiled-statement cache and,
        on PostgreSQL, the connection's prepared statements are ready for the first call (a
        first acquire on a new handle took 11 ms instead of 1)."""
        params = {"u": "", "s": "", "oh": "", "o": "", "bh": "", "b": "", "after": 0}
        params.update(_values(LogHead(), 0))
        params.update(lease=1.0, now=0.0, epoch=0, expected=0, first=1, last=1, cp=0, d="")
        params.update(data=b"")
        with conn, conn.begin() as tx:
            for stmt in (q.lock, q.lock_commit, q.absent, q.head, q.is_sealed, q.read(None)):
                conn.execute(stmt, params)
            if self._fast is not None:  # they change no row here (no head has these ids)
                for fast in (self._fast.acquire, *self._fast.commit.values()):
                    conn.execute(fast, params)
            if self._backend != "sqlite":  # SQLite: no write lock taken for nothing
                conn.execute(q.update_head, params)
            tx.rollback()

    def _now(self, row: Row[Any] | None) -> float:
        if self._clock is not None:
            return float(self._clock())
        if row is None:
            raise RuntimeError("the database clock was not read")  # pragma: no cover
        return float(row.now)

    def _lock(self, conn: Connection, stmt: Any, params: dict[str, Any]) -> Row[Any] | None:
        """The head row, locked. If the statement's snapshot predates the lock it waited for,
        read again: the lock is ours now, and a new statement (READ COMMITTED) sees what the
        previous holder committed. Still older (a REPEATABLE READ engine): run the whole
        transaction again. (Restarting at once starved a waiter behind a busy writer.)"""
        row = conn.execute(stmt, params).first()
        if row is not None and row.rev != row.snap_rev:
            row = conn.execute(stmt, params).first()
            if row is not None and row.rev != row.snap_rev:
                raise RetryTransaction()
        return row

    def _create(self, conn: Connection, params: dict[str, Any], head: LogHead) -> None:
        try:
            conn.execute(self._queries.insert_head, {**params, **_values(head, new_generation())})
        except sa_exc.IntegrityError as exc:
            if is_duplicate(exc):  # another transaction created the head meanwhile
                raise RetryTransaction() from exc
            raise

    async def _try_fast(
        self, what: str, finish: bool | None, params: dict[str, Any]
    ) -> LogHead | None:
        """The one-statement path's head (``finish`` None: the acquire's, else a commit's),
        None to take the locked transaction (log_fast). A lost connection too: if the
        statement had landed, the transaction finds its commit and answers the duplicate
        (same seqs), or finds the head moved. Sent by asyncpg itself when it is the driver."""
        assert self._fast is not None
        if self._clock is not None:
            params = {**params, "now": float(self._clock())}
        if self._pg is not None:
            sql = self._pg.acquire if finish is None else self._pg.commit[finish]
            return await self._pg.fetch_head(what, sql, params)
        stmt = self._fast.acquire if finish is None else self._fast.commit[finish]
        try:
            row = await self._retry.read(what, lambda c: run_fast(c, stmt, params))
        except StoreUnavailable:
            return None
        return None if row is None else head_of(row)

    def _raw_reader(self) -> Callable[..., Awaitable[list[Any]]] | None:
        if self._pg is not None:
            return self._pg.read
        return None if self._lite is None else self._lite.read

    def _raw_read_at(self) -> Callable[..., Awaitable[list[Any]]] | None:
        return None if self._pg is None else self._pg.read_at

    @property
    def _queries(self) -> LogQueries:
        assert self._q is not None
        return self._q

    @staticmethod
    def _what(op: str, user_id: str, session_id: str) -> str:
        return f"log {op} {slot_name(user_id, session_id, 'log')}"

    # ------------------------------------------------------------------ the lease

    async def acquire(
        self, user_id: str, session_id: str, owner: str, lease_seconds: float
    ) -> LogWriter:
        check_session(user_id, session_id)
        check_owner(owner)
        lease = check_lease(lease_seconds)
        q = await self._ready()
        params = {"u": user_id, "s": session_id, "oh": owner_hash(owner), "o": owner}
        what = self._what("acquire", user_id, session_id)
        if self._fast is not None:
            fast = await self._try_fast(what, None, {**params, "lease": lease})
            if fast is not None:
                return LogWriter(user_id, session_id, owner, fast.epoch, fast.lease_until, fast.seq)
        if self._lite is not None:
            now = self._now(None)
            got = await self._lite.acquire(user_id, session_id, owner, params["oh"], now, lease)
            if got is not None:
                return LogWriter(user_id, session_id, owner, got.epoch, got.lease_until, got.seq)

        def op(conn: Connection) -> LogHead:
            row = self._lock(conn, q.lock, params)
            if row is None:
                new = conn.execute(q.absent, params).one()
                args = (user_id, session_id, owner, self._now(new), lease)
                head = plan_acquire(LogHead(), *args, sealed=bool(new.sealed))
                self._create(conn, params, head)
                return head
            args = (user_id, session_id, owner, self._now(row), lease)
            head = plan_acquire(_head(row), *args, sealed=bool(row.sealed))
            conn.execute(q.update_head, {**params, **_values(head, row.rev + 1)})
            return head

        head = await self._lease_retry.write(what, op)
        return LogWriter(user_id, session_id, owner, head.epoch, head.lease_until, head.seq)

    async def renew(self, writer: LogWriter, lease_seconds: float) -> LogWriter:
        check_writer(writer)
        lease = check_lease(lease_seconds)
        q = await self._ready()
        u, s = writer.user_id, writer.session_id
        params = {"u": u, "s": s, "oh": owner_hash(writer.owner), "o": writer.owner}

        def op(conn: Connection) -> float:
            row = self._lock(conn, q.lock, params)
            now = self._now(row) if row is not None or self._clock else 0.0
            head = _head(row)
            check_holds(head, writer, now, "renew")
            assert row is not None  # check_holds refuses the empty head
            new = attrs.evolve(head, lease_until=now + lease)
            conn.execute(q.update_head, {**params, **_values(new, row.rev + 1)})
            return now + lease

        until = await self._lease_retry.write(self._what("renew", u, s), op)
        return attrs.evolve(writer, lease_until=until)

    async def release(self, writer: LogWriter) -> bool:
        check_writer(writer)
        q = await self._ready()
        u, s = writer.user_id, writer.session_id
        params = {"u": u, "s": s, "oh": owner_hash(writer.owner), "o": writer.owner}

        def op(conn: Connection) -> bool:
            row = self._lock(conn, q.lock, params)
            head = _head(row)
            if row is None or head.epoch != writer.epoch or head.owner != writer.owner:
                return False
            new = attrs.evolve(head, owner=None, lease_until=0.0)
            conn.execute(q.update_head, {**params, **_values(new, row.rev + 1)})
            return True

        return await self._lease_retry.write(self._what("release", u, s), op)

    async def seal(self, user_id: str, session_id: str, owner: str) -> None:
        check_session(user_id, session_id)
        check_owner(owner)
        q = await self._ready()
        params = {"u": user_id, "s": session_id, "oh": owner_hash(owner), "o": owner}

        def op(conn: Connection) -> None:
            row = self._lock(conn, q.lock, params)
            if row is None:  # a session with no head yet: made now, as acquire would
                self._create(conn, params, LogHead())
            if row is None or not row.sealed:
                conn.execute(q.insert_seal, params)
            if row is not None:  # rev moves even if the head does not: see log_queries
                head = _head(row)
                if head.owner == owner:
                    head = attrs.evolve(head, owner=None, lease_until=0.0)
                conn.execute(q.update_head, {**params, **_values(head, row.rev + 1)})

        await self._retry.write(self._what("seal", user_id, session_id), op)

    # ------------------------------------------------------------------ the log

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
        q = await self._ready()
        u, s = writer.user_id, writer.session_id
        params = {"u": u, "s": s, "oh": owner_hash(writer.owner), "o": writer.owner}
        params.update(bh=id_hash(batch_id), b=batch_id)
        if self._fast is not None and type(expected_seq) is int and 0 <= expected_seq < MAX_SEQ:
            first, last = expected_seq + 1, expected_seq + len(events)
            fast = {**params, "epoch": writer.epoch, "expected": expected_seq, "first": first}
            fast.update(last=last, cp=checkpoint_in(events, first), d=digest, data=data)
            got = await self._try_fast(self._what("commit", u, s), bool(finish), fast)
            if got is not None:
                return CommitResult(first, last, got)
        elif self._lite is not None and type(expected_seq) is int and 0 <= expected_seq < MAX_SEQ:
            first, last = expected_seq + 1, expected_seq + len(events)
            key = (u, s, writer.owner, params["oh"])
            batch = (batch_id, params["bh"], digest, data)
            cp, now = checkpoint_in(events, first), self._now(None)
            got = await self._lite.commit(
                key, writer.epoch, expected_seq, last, batch, cp, now, finish
            )
            if got is not None:
                return CommitResult(first, last, got)
        what = self._what("commit", u, s)

        def op(conn: Connection) -> CommitResult:
            row = self._lock(conn, q.lock_commit, params)
            head, prior = _head(row), None
            if row is not None and row.prior_first is not None:
                prior = (int(row.prior_first), int(row.prior_last), str(row.prior_digest))
            now = self._now(row) if row is not None or self._clock else 0.0
            plan = plan_commit(
                head, writer, batch_id, expected_seq, events, data, digest, now,
                prior=prior, finish=finish,
            )  # fmt: skip
            if plan.result is not None:
                return plan.result
            assert row is not None  # plan_commit refuses the empty head
            if row.last_first is not None and row.last_first > head.seq:  # an orphan
                conn.execute(q.drop_orphans, {**params, "head": head.seq})
            new = {**params, **_values(plan.head, row.rev + 1)}
            new.update(first=plan.first_seq, last=plan.last_seq, d=digest, data=data)
            try:
                if q.commit_cte:
                    done = conn.execute(q.commit_cte[plan.seal is not None], new).rowcount
                    if done != 1:  # pragma: no cover - the head row is locked
                        raise LogCorrupt(f"{slot_name(u, s, 'log')}: the head row went away")
                else:
                    conn.execute(q.insert_commit, new)
                    conn.execute(q.update_head, new)
                    if plan.seal is not None and not row.sealed:
                        conn.execute(q.insert_seal, new)
            except sa_exc.IntegrityError as exc:
                if not is_duplicate(exc):
                    raise
                raise LogCorrupt(
                    f"{slot_name(u, s, 'log')}: a stored commit under the head overlaps seq "
                    f"{plan.first_seq} or holds batch {batch_id!r} (rows changed by hand)"
                ) from None
            return CommitResult(plan.first_seq, plan.last_seq, plan.head)

        return await self._retry.write(what, op)

    async def delete(self, user_id: str, session_id: str) -> bool:
        check_session(user_id, session_id)
        q = await self._ready()
        params = {"u": user_id, "s": session_id}

        def op(conn: Connection) -> bool:  # the head first: it waits for a commit in flight
            return sum(conn.execute(stmt, params).rowcount for stmt in q.delete) > 0

        return await self._retry.write(self._what("delete", user_id, session_id), op)

    async def aclose(self) -> None:
        self._closed = True
        self._q = None
        await self._runner.aclose()
        if self._owns_engine:
            await self._engine.dispose()
