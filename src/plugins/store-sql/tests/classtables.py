"""Tables made once per test class on a server (PostgreSQL, MariaDB) and emptied before each
test, so each test still gets a fresh, empty store or log on the real server without a
CREATE and a DROP of its own (that DDL was most of such a test's time: 0.3-1 s a test)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
from hookagent_store_sql import TableNames
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlenv import drop_tables, unique_name, url_for


@attrs.frozen
class ClassTables:
    url: str
    names: TableNames
    tables: tuple[str, ...]  # every data table the migrations made (not the migrations one)

    async def empty(self, engine: AsyncEngine) -> None:
        """Delete every row (DML, no DDL) through ``engine`` (the new handle's own, so no
        extra connection): the handle then sees an empty store or log."""
        async with engine.begin() as conn:
            prep = conn.dialect.identifier_preparer
            schema = f"{prep.quote_schema(self.names.schema)}." if self.names.schema else ""
            for table in self.tables:
                await conn.exec_driver_sql(f"DELETE FROM {schema}{prep.quote(table)}")


def _in_thread(work: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine on an event loop of its own (a class-scoped fixture is synchronous and
    the tests' loop is not running between tests)."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(asyncio.run(work()))
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return out[0]


@contextmanager
def class_tables(
    dialect: str,
    tmp_path: Path,
    make: Callable[[str, TableNames], Any],
    *,
    schema: bool = False,
) -> Iterator[ClassTables]:
    """Tables of ``make(url, names)``'s handle (opened once, which migrates), dropped at the
    end. ``schema``: in a schema of their own (PostgreSQL)."""
    url = url_for(dialect, tmp_path)
    names = TableNames(unique_name(), unique_name("s").rstrip("_") if schema else None)

    async def create() -> tuple[str, ...]:
        handle = make(url, names)
        try:
            await handle.open()
        finally:
            await handle.aclose()
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                found = await conn.run_sync(
                    lambda c: inspect(c).get_table_names(schema=names.schema)
                )
        finally:
            await engine.dispose()
        mine = sorted(t for t in found if t.startswith(names.prefix) and t != names.migrations)
        if not mine:
            raise RuntimeError(f"{dialect}: opening a handle made no tables ({names})")
        return tuple(mine)

    try:
        yield ClassTables(url, names, _in_thread(create))
    finally:
        _in_thread(lambda: drop_tables(url, names))
