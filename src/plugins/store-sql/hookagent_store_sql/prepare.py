"""What a store and a session log do before their first statement, the same way: SQLite in
WAL mode, then the migrations checked (or run, with ``auto_migrate``) under the file lock."""

from __future__ import annotations

from typing import Any

from hookagent.errors import StoreConfigurationError
from sqlalchemy.ext.asyncio import AsyncEngine

from .config import TableNames
from .migrations import check_migrations, migrate
from .sqlite import maybe_lock


async def prepare_schema(
    engine: AsyncEngine,
    backend: str,
    names: TableNames,
    sqlite_key: Any,
    *,
    auto_migrate: bool,
    what: str,
    opened_with: str,
) -> None:
    """Refuse with ``StoreConfigurationError`` when the schema is behind and may not migrate.

    ``what`` names the object in the message ("the SQL store"); ``opened_with`` says how to
    let it migrate ("create the store with auto_migrate=True")."""
    kw = {"table_prefix": names.prefix, "schema": names.schema}
    if backend == "sqlite":
        async with engine.connect() as conn:
            mode = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar()
            if str(mode).lower() != "wal":
                await conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    async with maybe_lock(sqlite_key):
        status = await (migrate if auto_migrate else check_migrations)(engine, **kw)
    if not status.up_to_date:
        raise StoreConfigurationError(
            f"{what}'s schema is at version {status.current}, this plugin needs "
            f"{status.latest}: run `python -m hookagent_store_sql migrate URL` "
            f"(or {opened_with})"
        )
