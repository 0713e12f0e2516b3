"""Where a store operation runs: the operations are plain synchronous SQLAlchemy Core
functions of a ``Connection``; a runner executes one as a read or as a write transaction.

* ``AsyncRunner`` (asyncpg, aiomysql, or any ``AsyncEngine`` given by the caller):
  ``AsyncConnection.run_sync``, so every statement is still sent by the async driver.
* ``ThreadRunner`` (SQLite from a URL): the whole operation is one hop into a thread owned
  by the database file (``filethread``), on the standard ``sqlite3`` driver. aiosqlite pays
  a thread hop per cursor call (about 4 per statement); a save here pays one. The file's
  single thread is also this process's writer lock for it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, TypeVar

from hookagent.errors import StoreUnavailable
from sqlalchemy import create_engine
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from .config import install_sqlite_pragmas
from .filethread import FileThread
from .sqlite import maybe_lock

T = TypeVar("T")
Op = Callable[[Connection], Any]

_EXECUTORS: dict[str, FileThread] = {}


def _forget_after_fork() -> None:
    _EXECUTORS.clear()  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_after_fork)


def in_transaction(conn: Connection, fn: Op, committing: list[bool], sqlite: bool) -> Any:
    """Run ``fn`` in one transaction; ``committing[0]`` is set once COMMIT is under way."""
    with conn.begin() as trans:
        if sqlite:
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # take the write lock now, not half-way
        result = fn(conn)
        committing[0] = True
        trans.commit()
    return result


class AsyncRunner:
    def __init__(self, engine: AsyncEngine, read_engine: AsyncEngine, sqlite_key: str | None):
        self._engine, self._read_engine, self._sqlite_key = engine, read_engine, sqlite_key

    async def read(self, fn: Op) -> Any:
        async with self._read_engine.connect() as conn:
            return await conn.run_sync(fn)

    async def write(self, fn: Op, committing: list[bool]) -> Any:
        async with maybe_lock(self._sqlite_key), self._engine.connect() as conn:
            return await conn.run_sync(in_transaction, fn, committing, self._sqlite_key is not None)

    async def aclose(self) -> None:
        return None


class ThreadRunner:
    def __init__(self, url: URL, path_key: str, *, busy_timeout: float, synchronous: str):
        self.engine: Engine = create_engine(url.set(drivername="sqlite+pysqlite"))
        install_sqlite_pragmas(self.engine, busy_timeout=busy_timeout, synchronous=synchronous)
        executor = _EXECUTORS.get(path_key)
        if executor is None:
            executor = _EXECUTORS[path_key] = FileThread("hookagent-sqlite")
        self._executor = executor

    def _read(self, fn: Op) -> Any:
        with self.engine.connect() as conn:
            return fn(conn)

    def _write(self, fn: Op, committing: list[bool]) -> Any:
        with self.engine.connect() as conn:
            return in_transaction(conn, fn, committing, True)

    def _in_thread(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """The future of ``fn(*args)`` in the file's thread; ``StoreUnavailable`` if that
        thread is gone (its executor shut down, e.g. at interpreter exit), not RuntimeError."""
        try:
            return asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        except RuntimeError as exc:
            raise StoreUnavailable(f"the SQLite file's thread is gone: {exc}") from exc

    async def read(self, fn: Op) -> Any:
        return await self._in_thread(self._read, fn)

    async def write(self, fn: Op, committing: list[bool]) -> Any:
        return await self._in_thread(self._write, fn, committing)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the file's thread (the direct path's operations)."""
        return await self._in_thread(fn, *args)

    def submit(self, fn: Callable[[], Any]) -> None:
        """Queue ``fn()`` in the file's thread without waiting (it reports by itself; no
        future is built: ``FileThread.post``)."""
        self._executor.post(fn)

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.engine.dispose)
