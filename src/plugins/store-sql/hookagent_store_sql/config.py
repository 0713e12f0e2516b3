"""Store configuration: validated table names, URL normalisation and engine creation.

Table names are the only SQL text we ever assemble, and they come from configuration checked
against ``NAME_RE``, never from ids or keys (those are always bound parameters).
"""

from __future__ import annotations

import re
from typing import Any

import attrs
from hookagent.errors import StoreConfigurationError
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from .schemes import DRIVERS
from .schemes import SCHEMES as SCHEMES  # re-exported: its old home

NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,30}$")
"""What a table prefix or schema name must look like (short enough for every dialect)."""

DEFAULT_PREFIX = "hookagent_"

# options that may be given in the URL's query string (removed before the driver sees it)
_URL_OPTIONS = ("table_prefix", "schema", "auto_migrate")


def check_name(value: object, what: str) -> str:
    """Return ``value`` if it is a safe SQL name fragment, else raise a configuration error."""
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise StoreConfigurationError(f"{what} must match {NAME_RE.pattern}, got {value!r}")
    return value


@attrs.frozen
class TableNames:
    """The physical names of the plugin's tables (prefix + fixed suffix, optional schema)."""

    prefix: str = DEFAULT_PREFIX
    schema: str | None = None

    def __attrs_post_init__(self) -> None:
        check_name(self.prefix, "table_prefix")
        if self.schema is not None:
            check_name(self.schema, "schema")

    @property
    def slots(self) -> str:
        return f"{self.prefix}slots"

    @property
    def messages(self) -> str:
        return f"{self.prefix}messages"

    @property
    def chunks(self) -> str:
        return f"{self.prefix}chunks"

    @property
    def message_rows(self) -> str:
        """The reporting view: one row per message, from the rows and the chunks."""
        return f"{self.prefix}message_rows"

    @property
    def fences(self) -> str:
        return f"{self.prefix}fences"

    @property
    def log_heads(self) -> str:
        return f"{self.prefix}log_heads"

    @property
    def log_commits(self) -> str:
        return f"{self.prefix}log_commits"

    @property
    def log_seals(self) -> str:
        return f"{self.prefix}log_seals"

    @property
    def migrations(self) -> str:
        return f"{self.prefix}schema_migrations"


def _parse_bool(value: str, what: str) -> bool:
    low = value.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise StoreConfigurationError(f"{what} must be a boolean, got {value!r}")


def split_url(url: str | URL) -> tuple[URL, dict[str, Any]]:
    """Normalise the driver and pull hookagent's own options out of the query string."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StoreConfigurationError(f"not a database URL: {exc}") from None
    driver = DRIVERS.get(parsed.drivername)
    if driver is None:
        raise StoreConfigurationError(
            f"unsupported SQL scheme {parsed.drivername!r}; use one of {', '.join(SCHEMES)}"
        )
    options: dict[str, Any] = {}
    for name in _URL_OPTIONS:
        if name in parsed.query:
            raw = parsed.query[name]
            value = raw[-1] if isinstance(raw, tuple) else raw
            options[name] = _parse_bool(value, name) if name == "auto_migrate" else value
    parsed = parsed.difference_update_query(_URL_OPTIONS).set(drivername=driver)
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:" or "mode=memory" in str(parsed):
            raise StoreConfigurationError(
                "the SQL store needs an SQLite file (sqlite+aiosqlite:///path/to/file.db); "
                "an in-memory database is private to one connection"
            )
    elif parsed.get_backend_name() in ("mysql", "mariadb") and "charset" not in parsed.query:
        parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    return parsed, options


def backend_of(engine: AsyncEngine) -> str:
    """'postgresql', 'mysql' (MySQL and MariaDB) or 'sqlite'."""
    name = engine.dialect.name
    if name in ("mysql", "mariadb"):
        return "mysql"
    if name in ("postgresql", "sqlite"):
        return name
    raise StoreConfigurationError(f"unsupported SQL dialect {name!r}")


def install_sqlite_pragmas(
    engine: AsyncEngine | Engine, *, busy_timeout: float, synchronous: str = "FULL"
) -> None:
    """Every new SQLite connection: a busy timeout and the chosen durability level."""
    if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
        raise StoreConfigurationError(
            f"sqlite_synchronous must be FULL, NORMAL or EXTRA, got {synchronous!r}"
        )
    ms = int(busy_timeout * 1000)
    sync = synchronous.upper()

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {ms}")
            cursor.execute(f"PRAGMA synchronous = {sync}")
        finally:
            cursor.close()

    target = engine.sync_engine if isinstance(engine, AsyncEngine) else engine
    event.listen(target, "connect", on_connect)


def make_engine(
    url: URL, *, sqlite_busy_timeout: float, sqlite_synchronous: str, **options: Any
) -> AsyncEngine:
    """Create the engine with sane pool defaults per backend (caller options win)."""
    backend = url.get_backend_name()
    opts: dict[str, Any] = {}
    if backend == "mysql" or backend == "mariadb":
        # READ COMMITTED: no gap locks on absent rows, so concurrent creates do not deadlock
        opts.update(isolation_level="READ COMMITTED", pool_recycle=3600, pool_timeout=10)
    elif backend == "postgresql":
        opts.update(pool_timeout=10)
    opts.update(options)
    try:
        engine = create_async_engine(url, **opts)
    except (ArgumentError, TypeError, ValueError) as exc:
        raise StoreConfigurationError(f"cannot create an engine for {url!r}: {exc}") from None
    if backend == "sqlite":
        install_sqlite_pragmas(
            engine, busy_timeout=sqlite_busy_timeout, synchronous=sqlite_synchronous
        )
    return engine
