"""Turning driver errors into hookagent's typed errors, and telling which ones to retry.

A caller sees ``StoreUnavailable`` (cause chained) for anything about reaching the database;
it never sees a raw asyncpg/pymysql/sqlite3 exception. Retries happen only where the
database guarantees nothing was applied: SQLite busy, deadlock and serialization victims.
"""

from __future__ import annotations

from typing import Any

from hookagent.errors import (
    HookagentError,
    InvalidState,
    StoreConfigurationError,
    StoreUnavailable,
)
from sqlalchemy import exc as sa_exc

_SQLITE_BUSY = ("database is locked", "database is busy", "database table is locked")
_MYSQL_RETRY = {1213, 1205}  # deadlock victim, lock wait timeout
_PG_RETRY = {"40P01", "40001"}  # deadlock detected, serialization failure


def _orig(exc: BaseException) -> Any:
    return getattr(exc, "orig", None)


def mysql_code(exc: BaseException) -> int | None:
    orig = _orig(exc)
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def pg_code(exc: BaseException) -> str | None:
    orig = _orig(exc)
    code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    return code if isinstance(code, str) else None


def is_sqlite_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sa_exc.OperationalError):
        return False
    text = str(_orig(exc) or exc).lower()
    return any(s in text for s in _SQLITE_BUSY)


def is_retryable(exc: BaseException) -> bool:
    """True when the database rolled the whole transaction back by itself (safe to rerun)."""
    if not isinstance(exc, sa_exc.DBAPIError) or exc.connection_invalidated:
        return False
    return is_sqlite_busy(exc) or mysql_code(exc) in _MYSQL_RETRY or pg_code(exc) in _PG_RETRY


def is_disconnect(exc: BaseException) -> bool:
    """The connection died (SQLAlchemy invalidated it) or could not be made."""
    if isinstance(exc, sa_exc.DBAPIError):
        return bool(exc.connection_invalidated)
    return isinstance(exc, (OSError, ConnectionError))


def is_duplicate(exc: BaseException) -> bool:
    return isinstance(exc, sa_exc.IntegrityError) and (
        mysql_code(exc) == 1062 or pg_code(exc) == "23505" or "UNIQUE" in str(_orig(exc))
    )


def translate(exc: BaseException, what: str, *, outcome_unknown: bool = False) -> BaseException:
    """The typed error to raise (``raise translate(e, ...) from e``) for a caught exception."""
    if isinstance(exc, HookagentError):
        return exc
    suffix = " (the write may or may not have been applied)" if outcome_unknown else ""
    if isinstance(exc, sa_exc.DataError):
        return InvalidState(f"{what}: the database refused a value: {_orig(exc) or exc}")
    if isinstance(exc, sa_exc.ProgrammingError) and not exc.connection_invalidated:
        return StoreConfigurationError(
            f"{what}: {_orig(exc) or exc} (is the schema migrated? "
            "python -m hookagent_store_sql check URL)"
        )
    if isinstance(exc, (sa_exc.SQLAlchemyError, OSError, TimeoutError, ConnectionError)):
        return StoreUnavailable(f"{what}: the database is unavailable: {_describe(exc)}{suffix}")
    return exc


def _describe(exc: BaseException) -> str:
    orig = _orig(exc)
    text = str(orig if orig is not None else exc).strip().splitlines()
    name = type(orig if orig is not None else exc).__name__
    return f"{name}: {text[0] if text else ''}"


TRANSLATED = (sa_exc.SQLAlchemyError, OSError, TimeoutError, ConnectionError)
"""Exception types ``translate`` maps; anything else propagates untouched."""
