"""Versioned, idempotent schema migrations shipped with the plugin.

Each migration has a number and a function that brings the tables from the previous number
to its own; the ``<prefix>schema_migrations`` table records which ones ran. Migrations run
under a lock (PostgreSQL advisory lock, MySQL ``GET_LOCK``, SQLite ``BEGIN IMMEDIATE``) so many
processes starting at once apply each migration exactly once, and every step checks what
exists first, so a run interrupted half-way (MySQL DDL is not transactional) can be rerun.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import attrs
from hookagent.errors import StoreConfigurationError, StoreUnavailable
from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .config import TableNames, split_url
from .errors import TRANSLATED, translate
from .log_schema import LogTables
from .schema import Flavor, Tables, migrations_table

MigrationFn = Callable[[AsyncConnection, TableNames, Flavor], Awaitable[None]]


def flavor_of(dialect: Dialect) -> Flavor:
    if dialect.name in ("mysql", "mariadb"):
        return Flavor("mariadb" if getattr(dialect, "is_mariadb", False) else "mysql")
    return Flavor(dialect.name)


def utcnow() -> datetime:
    """Naive UTC (every dialect stores timestamps without a zone; documented as UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)


async def _has_table(conn: AsyncConnection, name: str, schema: str | None) -> bool:
    return await conn.run_sync(lambda c: inspect(c).has_table(name, schema=schema))


async def _columns(conn: AsyncConnection, name: str, schema: str | None) -> set[str]:
    def get(c: Connection) -> set[str]:
        return {col["name"] for col in inspect(c).get_columns(name, schema=schema)}

    return await conn.run_sync(get)


# --------------------------------------------------------------------------- the migrations


async def _m1_initial(conn: AsyncConnection, names: TableNames, flavor: Flavor) -> None:
    """Slots (head + counters) and messages (one row per message)."""
    v1 = Tables(names, flavor, version=1)
    await conn.run_sync(lambda c: v1.metadata.create_all(c, checkfirst=True))


async def _m2_generation_and_fences(
    conn: AsyncConnection, names: TableNames, flavor: Flavor
) -> None:
    """``slots.generation`` (bumped on history rewrites, lets readers fetch only the new tail)
    and the ``fences`` table (newest lease epoch per user and session)."""
    tables = Tables(names, flavor)
    if "generation" not in await _columns(conn, names.slots, names.schema):
        qualified = conn.dialect.identifier_preparer.format_table(tables.slots)
        await conn.exec_driver_sql(
            f"ALTER TABLE {qualified} ADD COLUMN generation BIGINT NOT NULL DEFAULT 0"
        )
    await conn.run_sync(lambda c: tables.fences.create(c, checkfirst=True))


async def _m3_session_log(conn: AsyncConnection, names: TableNames, flavor: Flavor) -> None:
    """The session log's heads, commits and sealed owners (``SqlSessionLog``)."""
    log = LogTables(names, flavor)
    await conn.run_sync(lambda c: log.metadata.create_all(c, checkfirst=True))


def view_sql(dialect: str, view: str, messages: str, chunks: str) -> str:
    """The reporting view ``<p>message_rows`` (user_id, slot_hash, seq, body): the old rows
    and every chunk's records, one row per message (names formatted by the caller)."""
    rows = f"SELECT user_id, slot_hash, seq, body FROM {messages}"  # noqa: S608
    if dialect == "postgresql":
        expanded = (
            "SELECT c.user_id, c.slot_hash, c.end_seq - c.n + (e.i - 1)::int, e.rec "  # noqa: S608
            f"FROM {chunks} c CROSS JOIN LATERAL "
            "unnest(string_to_array(c.body, E'\\n')) WITH ORDINALITY AS e(rec, i)"
        )
        return f"CREATE OR REPLACE VIEW {view} (user_id, slot_hash, seq, body) AS {rows} UNION ALL {expanded}"
    if dialect in ("mysql", "mariadb"):
        expanded = (
            "SELECT c.user_id, c.slot_hash, c.end_seq - c.n + e.i - 1, e.rec "  # noqa: S608
            f"FROM {chunks} c, JSON_TABLE(CONCAT('[', REPLACE(c.body, CHAR(10), ','), ']'), "
            "'$[*]' COLUMNS (i FOR ORDINALITY, rec JSON PATH '$')) AS e"
        )
        return f"CREATE OR REPLACE VIEW {view} (user_id, slot_hash, seq, body) AS {rows} UNION ALL {expanded}"
    expanded = (
        "SELECT c.user_id, c.slot_hash, c.end_seq - c.n + e.key, e.value "  # noqa: S608
        f"FROM {chunks} c, json_each('[' || replace(c.body, char(10), ',') || ']') AS e"
    )
    return f"CREATE VIEW IF NOT EXISTS {view} (user_id, slot_hash, seq, body) AS {rows} UNION ALL {expanded}"


async def _m4_chunks(conn: AsyncConnection, names: TableNames, flavor: Flavor) -> None:
    """``<p>chunks``: a row per save (the save's records joined by a newline) after the
    rows a slot already holds; nothing is rewritten. And the reporting view over both."""
    tables = Tables(names, flavor)
    await conn.run_sync(lambda c: tables.chunks.create(c, checkfirst=True))
    prep = conn.dialect.identifier_preparer
    view = prep.quote(names.message_rows)
    if names.schema is not None:
        view = f"{prep.quote_schema(names.schema)}.{view}"
    sql = view_sql(
        flavor.name, view, prep.format_table(tables.messages), prep.format_table(tables.chunks)
    )
    await conn.exec_driver_sql(sql)


@attrs.frozen
class Migration:
    version: int
    name: str
    apply: MigrationFn


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _m1_initial),
    Migration(2, "generation_and_fences", _m2_generation_and_fences),
    Migration(3, "session_log", _m3_session_log),
    Migration(4, "chunks", _m4_chunks),
)
LATEST = MIGRATIONS[-1].version


@attrs.frozen
class MigrationStatus:
    """Where a database stands: ``current`` applied, ``latest`` known, what is ``pending``."""

    current: int
    latest: int
    applied: tuple[int, ...]
    pending: tuple[int, ...]

    @property
    def up_to_date(self) -> bool:
        return not self.pending and self.current == self.latest


# --------------------------------------------------------------------------- running them


def _lock_key(names: TableNames) -> str:
    ident = f"hookagent_store_sql:{names.schema or ''}:{names.prefix}".encode()
    return hashlib.sha256(ident).hexdigest()[:40]


@asynccontextmanager
async def _migration_lock(
    conn: AsyncConnection, names: TableNames, *, own_tx: bool
) -> AsyncIterator[None]:
    name = conn.dialect.name
    key = _lock_key(names)
    if name == "postgresql":
        # released when the transaction ends
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": int(key[:15], 16)})
        yield
    elif name in ("mysql", "mariadb"):
        got = (await conn.execute(text("SELECT GET_LOCK(:k, 60)"), {"k": key})).scalar()
        if got != 1:
            raise StoreUnavailable("timed out waiting for the migration lock")
        try:
            yield
        finally:
            await conn.execute(text("SELECT RELEASE_LOCK(:k)"), {"k": key})
    else:
        if own_tx:
            await conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield


async def _ensure_schema(conn: AsyncConnection, names: TableNames) -> None:
    if names.schema is None:
        return
    name = conn.dialect.name
    quoted = conn.dialect.identifier_preparer.quote_schema(names.schema)
    if name == "postgresql":
        await conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {quoted}")
    elif name in ("mysql", "mariadb"):
        await conn.exec_driver_sql(
            f"CREATE DATABASE IF NOT EXISTS {quoted} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )
    else:
        raise StoreConfigurationError("SQLite has no schemas: use table_prefix instead")


async def _applied(conn: AsyncConnection, names: TableNames, flavor: Flavor) -> tuple[int, ...]:
    if not await _has_table(conn, names.migrations, names.schema):
        return ()
    ledger = migrations_table(names, flavor)
    rows = await conn.execute(select(ledger.c.version).order_by(ledger.c.version))
    return tuple(int(r[0]) for r in rows)


def _status(applied: tuple[int, ...]) -> MigrationStatus:
    current = max(applied, default=0)
    pending = tuple(m.version for m in MIGRATIONS if m.version not in applied)
    return MigrationStatus(current, LATEST, applied, pending)


async def _migrate_on(
    conn: AsyncConnection, names: TableNames, target: int, *, own_tx: bool
) -> MigrationStatus:
    flavor = flavor_of(conn.dialect)
    async with _migration_lock(conn, names, own_tx=own_tx):
        await _ensure_schema(conn, names)
        ledger = migrations_table(names, flavor)
        await conn.run_sync(lambda c: ledger.create(c, checkfirst=True))
        applied = await _applied(conn, names, flavor)
        if max(applied, default=0) > LATEST:
            raise StoreConfigurationError(
                f"the database schema is at version {max(applied)}, newer than this plugin "
                f"knows ({LATEST}); upgrade hookagent-store-sql"
            )
        for m in MIGRATIONS:
            if m.version in applied or m.version > target:
                continue
            await m.apply(conn, names, flavor)
            await conn.execute(
                ledger.insert().values(version=m.version, name=m.name, applied_at=utcnow())
            )
            applied += (m.version,)
        return _status(applied)


@asynccontextmanager
async def _connection(
    target: AsyncEngine | AsyncConnection | str,
) -> AsyncIterator[tuple[AsyncConnection, bool]]:
    """Yield (connection, whether we own the transaction)."""
    if isinstance(target, AsyncConnection):
        if target.in_transaction():
            yield target, False  # the caller commits
        else:
            async with target.begin():
                yield target, True
        return
    engine = target
    owned = isinstance(target, str)
    if isinstance(target, str):
        from .config import make_engine

        url, _ = split_url(target)
        engine = make_engine(url, sqlite_busy_timeout=5.0, sqlite_synchronous="FULL")
    assert isinstance(engine, AsyncEngine)
    try:
        async with engine.connect() as conn, conn.begin():
            yield conn, True
    finally:
        if owned:
            await engine.dispose()


def _names(target: Any, table_prefix: str | None, schema: str | None) -> TableNames:
    opts: dict[str, Any] = {}
    if isinstance(target, str):
        _, opts = split_url(target)
    prefix = table_prefix if table_prefix is not None else opts.get("table_prefix")
    return TableNames(
        prefix if prefix is not None else TableNames().prefix,
        schema if schema is not None else opts.get("schema"),
    )


async def migrate(
    target: AsyncEngine | AsyncConnection | str,
    *,
    table_prefix: str | None = None,
    schema: str | None = None,
    to_version: int | None = None,
) -> MigrationStatus:
    """Apply every pending migration (up to ``to_version``); safe to call any number of times.

    ``target`` is an engine, a URL, or a connection: inside the caller's transaction if one
    is open (the caller commits), otherwise in a transaction of our own.
    """
    names = _names(target, table_prefix, schema)
    goal = LATEST if to_version is None else to_version
    if type(goal) is not int or not 1 <= goal <= LATEST:
        raise StoreConfigurationError(f"to_version must be between 1 and {LATEST}, got {goal!r}")
    try:
        async with _connection(target) as (conn, own_tx):
            return await _migrate_on(conn, names, goal, own_tx=own_tx)
    except TRANSLATED as exc:
        raise translate(exc, "migrate") from exc


async def check_migrations(
    target: AsyncEngine | AsyncConnection | str,
    *,
    table_prefix: str | None = None,
    schema: str | None = None,
) -> MigrationStatus:
    """Report the schema version without changing anything."""
    names = _names(target, table_prefix, schema)
    try:
        async with _connection(target) as (conn, _own):
            return _status(await _applied(conn, names, flavor_of(conn.dialect)))
    except TRANSLATED as exc:
        raise translate(exc, "check_migrations") from exc
