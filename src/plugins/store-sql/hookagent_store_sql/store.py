"""``SQLAgentStateStore``: versioned slots in PostgreSQL, MySQL/MariaDB or SQLite.

A save is one transaction: [fence upsert], the compare-and-set ``UPDATE ... WHERE version =
:expected`` (rowcount checked) or the create-if-absent ``INSERT``, then only the changed
messages (``DELETE`` of the rows and chunks past the rewrite's start when the stored history
must shrink, ``INSERT`` of one chunk: a row per save, ``<p>chunks``). A load is one statement
returning the head and only the rows and chunks past what this instance already holds for the
slot's generation (old slots keep the rows, one per message, older versions wrote). The load, the append and the create take a direct
path where one exists: asyncpg statements on PostgreSQL (``pg_direct``), plain ``sqlite3``
calls in the file's thread on SQLite (``sqlite_direct``, with group commit in
``sqlite_batch``, the overlapped cold load in ``sqlite_cold``, and the warm load's version
check on the loop's thread in ``sqlite_check``). What is rerun lives in
``retry``; what a load or a save trusts of the stored rows in ``verify``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from hookagent.errors import (
    CorruptState,
    HookagentError,
    StoreConfigurationError,
    StoreUnavailable,
    UnsupportedSchemaVersion,
    VersionConflict,
)
from hookagent.state import AgentState
from hookagent.store.base import (
    AGENT_STATE_KEY,
    ExpectedVersion,
    Fence,
    SessionPage,
    Versioned,
)
from hookagent.store.ids import (
    check_cursor,
    check_expected_version,
    check_fence,
    check_id,
    check_page_limit,
    check_slot,
    check_state_slot,
    slot_name,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from . import sqlite_cold, verify
from .cache import CachedSlot, SlotCache
from .config import TableNames, backend_of, install_sqlite_pragmas, make_engine, split_url
from .direct import direct_save
from .errors import TRANSLATED
from .migrations import flavor_of
from .pg_direct import PgDirect, usable
from .prepare import prepare_schema
from .queries import Queries
from .retry import Retrying
from .runner import AsyncRunner, ThreadRunner
from .save import SavePlan
from .schema import Tables, slot_hash
from .sqlite import database_key
from .sqlite_direct import SqliteDirect


class SQLAgentStateStore:
    """The SQL state store (see the plugin README for URLs, schema and options)."""

    def __init__(
        self,
        engine: AsyncEngine | str,
        *,
        table_prefix: str | None = None,
        schema: str | None = None,
        auto_migrate: bool | None = None,
        cache_slots: int = 256,
        sqlite_busy_timeout: float = 5.0,
        sqlite_synchronous: str = "FULL",
        retry_deadline: float = 10.0,
        retry_disconnects: bool = True,
        one_statement_appends: bool = True,
        direct_path: bool = True,
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
        self._backend = backend_of(self._engine)
        # kernel.store_locality: a SQLite file is this host's; a server is every host's
        self.locality = "host" if self._engine.dialect.name == "sqlite" else "shared"
        prefix = table_prefix if table_prefix is not None else url_opts.get("table_prefix")
        self._names = TableNames(
            prefix if prefix is not None else TableNames().prefix,
            schema if schema is not None else url_opts.get("schema"),
        )
        if self._backend == "sqlite" and self._names.schema is not None:
            raise StoreConfigurationError("SQLite has no schemas: use table_prefix instead")
        auto = auto_migrate if auto_migrate is not None else url_opts.get("auto_migrate", True)
        self._auto_migrate = bool(auto)
        self._sqlite_key: str | None = None
        if self._backend == "sqlite":
            database = self._engine.url.database
            if not database or database == ":memory:":
                raise StoreConfigurationError("the SQL store needs an SQLite file, not :memory:")
            self._sqlite_key = database_key(database)
        # PostgreSQL reads in autocommit: no BEGIN/ROLLBACK round trips for one SELECT
        self._read_engine = (
            self._engine.execution_options(isolation_level="AUTOCOMMIT")
            if self._backend == "postgresql"
            else self._engine
        )
        self._runner: AsyncRunner | ThreadRunner
        if self._backend == "sqlite" and self._owns_engine:
            assert self._sqlite_key is not None
            self._runner = ThreadRunner(
                self._engine.url,
                self._sqlite_key,
                busy_timeout=sqlite_busy_timeout,
                synchronous=sqlite_synchronous,
            )
        else:
            self._runner = AsyncRunner(self._engine, self._read_engine, self._sqlite_key)
        self._retry = Retrying(self._runner, retry_deadline, retry_disconnects)
        self._cache = SlotCache(cache_slots)
        self._one_statement_appends = one_statement_appends
        self._direct_path = direct_path
        self._direct: PgDirect | SqliteDirect | None = None
        self._q: Queries | None = None
        self._ready_lock: asyncio.Lock | None = None
        self._closed = False

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLAgentStateStore({url!r}, table_prefix={self._names.prefix!r})"

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    @property
    def data_engine(self) -> Engine:
        """The (sync) engine the data statements go through, e.g. for event listeners."""
        if isinstance(self._runner, ThreadRunner):
            return self._runner.engine
        return self._engine.sync_engine

    @property
    def tables(self) -> Tables:
        """The table objects (for reporting code and tests); valid after first use."""
        return Tables(self._names, flavor_of(self._engine.dialect))

    # ------------------------------------------------------------------ plumbing

    async def _ready(self) -> Queries:
        if self._q is not None:
            return self._q
        if self._closed:
            raise StoreUnavailable("the SQL store is closed")
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
            what="the SQL store",
            opened_with="create the store with auto_migrate=True",
        )
        tables = Tables(self._names, flavor_of(self._engine.dialect))
        self._q = Queries(tables, self._backend)
        if not self._direct_path:
            pass
        elif usable(self._engine):
            self._direct = PgDirect(self._engine, tables)
        elif isinstance(self._runner, ThreadRunner):
            self._direct = SqliteDirect(self._runner, tables)

    async def open(self) -> SQLAgentStateStore:
        """Do now what the first operation would: check (or run) the migrations, make the
        first connection, and on PostgreSQL prepare the hot statements on it. Errors are left
        for the first operation to report (the database may come up later). Returns self."""
        try:
            await self._ready()
            if self._direct is not None:
                await self._direct.warm()
            else:
                await self._runner.read(lambda conn: conn.exec_driver_sql("SELECT 1").all())
        except (HookagentError, *TRANSLATED):
            pass
        return self

    # ------------------------------------------------------------------ loads

    async def get_versioned(
        self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY
    ) -> Versioned:
        check_slot(user_id, session_id, key)
        slot = (user_id, session_id, key)
        try:
            return await self._load(slot)
        except HookagentError as exc:
            verify.name_error(exc, slot)
            raise

    async def _load(self, slot: tuple[str, str, str]) -> Versioned:
        user_id, session_id, key = slot
        h = slot_hash(session_id, key)
        if self._q is None:  # (``_ready``, without a coroutine per call once ready)
            await self._ready()
        cached = self._cache.get(slot)
        if cached is None and isinstance(self._direct, SqliteDirect):
            got = await self._load_cold(self._direct, user_id, h)
            if got is not None:
                if got[0] is None:
                    self._cache.drop(slot)
                    return Versioned(None, 0)
                (version, generation, count, head), messages = got
                verify.check_counters(version, generation, count, slot)
                if len(messages) == count:  # else a chunk stopped short: the row read reports
                    state = verify.decode_slot(head, messages, count, slot)
                    self._cache.put(slot, CachedSlot(version, generation, messages, count, head))
                    return Versioned(state, version)
        if cached is None and isinstance(self._direct, PgDirect):
            return await self._load_cold_pg(self._direct, slot, h)
        if (
            cached is not None
            and isinstance(self._direct, SqliteDirect)
            and self._direct.unchanged(user_id, h, cached)
        ):  # the slot is as cached, head included (checked on the loop's thread)
            log = cached.extended(cached.length, ())
            return Versioned(
                verify.decode_slot(cached.head, log, cached.length, slot), cached.version
            )
        for _ in range(2):
            start = cached.length if cached is not None else 0
            held = (cached.version, cached.generation) if cached is not None else (-1, -1)
            rows = await self._read_rows(user_id, h, start, held)
            if rows and rows[0][0] != -1:
                rows = sorted(rows, key=itemgetter(0))  # the statement does not sort: we do
            if not rows or rows[0][0] != -1:
                self._cache.drop(slot)
                return Versioned(None, 0)
            _, version, generation, count, head = rows[0]
            self._cache.drop(slot)  # cached again below, only once all of it checked out
            verify.check_counters(version, generation, count, slot)
            if head is None:  # PostgreSQL: still at the version and generation we hold
                if cached is None or (version, generation) != held:
                    raise CorruptState(f"{slot_name(*slot)}: the load sent no head")
                head = cached.head
            if cached is not None and (generation != cached.generation or start > count):
                cached = None  # rewritten (or recreated) since: read the whole history
                continue
            new = verify.decode_tail(rows, start, count, slot)
            # the cached list, extended by the new rows: no copy of the history per load
            log = cached.extended(start, new) if cached is not None else new
            state = verify.decode_slot(head, log, count, slot)
            self._cache.put(slot, CachedSlot(version, generation, log, count, head))
            return Versioned(state, version)
        raise CorruptState(f"{slot_name(*slot)} changed shape while being read twice")

    async def _load_cold_pg(
        self, direct: PgDirect, slot: tuple[str, str, str], h: str
    ) -> Versioned:
        """PostgreSQL's cold load: the head and every row in one statement, the rows as two
        arrays (``PgDirect.load_cold``), checked as the row read checks them."""
        got: Any = await self._retry.read_with("load", lambda: direct.load_cold(slot[0], h))
        self._cache.drop(slot)
        if got is None:
            return Versioned(None, 0)
        version, generation, count, head, seqs, bodies, ends, ns, chunks = got
        verify.check_counters(version, generation, count, slot)
        if head is None:
            raise CorruptState(f"{slot_name(*slot)}: the load sent no head")
        if ends or chunks:
            split = verify.split_chunks(ends or (), ns or (), chunks or (), slot)
            messages = verify.decode_split(seqs or (), bodies or (), split, count, slot)
        else:
            messages = verify.decode_columns(seqs or (), bodies or (), 0, count, slot)
        state = verify.decode_slot(head, messages, count, slot)
        self._cache.put(slot, CachedSlot(version, generation, messages, count, head))
        return Versioned(state, version)

    async def _load_cold(self, direct: SqliteDirect, user_id: str, h: str) -> Any:
        """SQLite's overlapped cold load: (head, messages), (None, ()) if there is no slot,
        or None when the ordinary read must decide (a chunk was not as expected)."""
        try:
            got: Any = await self._retry.read_with("load", lambda: direct.load_cold(user_id, h))
        except sqlite_cold.Mismatch:
            return None
        return got if got is not None else (None, ())

    async def _read_rows(
        self, user_id: str, h: str, start: int, held: tuple[int, int] = (-1, -1)
    ) -> Sequence[Any]:
        """The load statement's rows, (seq, version, generation, message_count, body): the
        head first (seq -1), then the messages from ``start``; empty if there is no slot.
        On PostgreSQL the head's body is None while the slot is at ``held`` (the version and
        generation of the head this instance holds)."""
        q = await self._ready()
        direct = self._direct
        if isinstance(direct, PgDirect):
            return await self._retry.read_with("load", lambda: direct.load(user_id, h, start, held))
        if direct is not None:
            return await self._retry.read_with("load", lambda: direct.load(user_id, h, start))
        params = {"u": user_id, "h": h, "start": start}
        return await self._retry.read("load", lambda conn: conn.execute(q.load, params).all())

    async def exists(self, user_id: str, session_id: str, key: str = AGENT_STATE_KEY) -> bool:
        check_slot(user_id, session_id, key)
        q = await self._ready()
        params = {"u": user_id, "h": slot_hash(session_id, key)}

        def fetch(conn: Connection) -> bool:
            return conn.execute(q.exists, params).first() is not None

        return await self._retry.read("exists", fetch)

    async def list_session_ids(
        self, user_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        check_id(user_id, "user_id", allow_empty=True)
        check_page_limit(limit)
        check_cursor(cursor)
        q = await self._ready()

        def fetch(conn: Connection) -> list[str]:
            rows = conn.execute(q.list_sessions(user_id, cursor, limit + 1))
            return [r[0] for r in rows]

        ids = await self._retry.read("list_session_ids", fetch)
        page = ids[:limit]
        return SessionPage(tuple(page), page[-1] if len(ids) > limit else None)

    # ------------------------------------------------------------------ writes

    async def save_if_version(
        self,
        user_id: str,
        session_id: str,
        state: AgentState,
        expected_version: ExpectedVersion,
        *,
        key: str = AGENT_STATE_KEY,
        fence: Fence | None = None,
    ) -> int:
        check_slot(user_id, session_id, key)
        slot = (user_id, session_id, key)
        try:
            check_expected_version(expected_version)
            check_fence(fence)
            if fence is not None:
                check_id(fence.owner, "fence owner", allow_empty=True)
            check_state_slot(state, user_id, session_id, key)  # before any statement
            return await self._save(slot, state, expected_version, fence)
        except HookagentError as exc:
            verify.name_error(exc, slot)
            raise

    async def _save(
        self,
        slot: tuple[str, str, str],
        state: AgentState,
        expected_version: ExpectedVersion,
        fence: Fence | None,
    ) -> int:
        user_id, session_id, key = slot
        plan = SavePlan(
            user_id, session_id, key, state, expected_version, fence, self._cache.get(slot)
        )
        q = self._q if self._q is not None else await self._ready()
        try:
            done = None
            if self._direct is not None and self._one_statement_appends:
                done = await direct_save(self._direct, plan, self._retry.read_with)
            if done is None:
                done = await self._retry.write("save", lambda conn: plan.run(conn, q))
            version, generation = done
        except (CorruptState, UnsupportedSchemaVersion):
            self._cache.drop(slot)  # the stored slot was refused: check all of it next time
            raise
        except (VersionConflict, ValueError):
            raise
        except BaseException:
            self._cache.drop(slot)  # the outcome may be unknown: reread everything next time
            raise
        self._cache.put(
            slot, CachedSlot(version, generation, plan.log_after(), plan.count, plan.head)
        )
        state.context.mark_committed()
        return version

    async def delete(self, user_id: str, session_id: str, key: str | None = None) -> bool:
        check_slot(user_id, session_id, AGENT_STATE_KEY if key is None else key)
        q = await self._ready()

        def one(conn: Connection) -> bool:
            params = {"u": user_id, "h": slot_hash(session_id, key or AGENT_STATE_KEY)}
            gone = conn.execute(q.delete_slot, params).rowcount
            conn.execute(q.delete_from, {**params, "start": 0})
            conn.execute(q.delete_chunks_from, {**params, "start": 0})
            return bool(gone)

        def every(conn: Connection) -> bool:
            params = {"u": user_id, "s": session_id}
            hashes = [r[0] for r in conn.execute(q.session_slots, params)]
            if not hashes:
                return False
            conn.execute(q.delete_session_messages, {"u": user_id, "hashes": hashes})
            conn.execute(q.delete_session_chunks, {"u": user_id, "hashes": hashes})
            conn.execute(q.delete_session_slots, params)
            return True

        try:
            return await self._retry.write("delete", one if key is not None else every)
        finally:
            self._cache.drop_session(user_id, session_id)

    async def aclose(self) -> None:
        self._closed = True
        self._q = None
        self._cache.clear()
        if isinstance(self._direct, SqliteDirect):
            try:
                await self._direct.aclose()
            except StoreUnavailable:  # the file's thread is gone: the connection goes with it
                pass
        await self._runner.aclose()
        if self._owns_engine:
            await self._engine.dispose()
