"""The store's retry rules around its runner: what is rerun, and when it gives up.

Why a module of its own: every read and write of the store goes through these rules, and
they are the one place that decides a failure was harmless (the database undid it all) or
must surface as a typed error (``translate``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from hookagent.errors import StoreUnavailable
from sqlalchemy.engine import Connection

from .errors import TRANSLATED, is_disconnect, is_retryable, is_sqlite_busy, translate
from .queries import RetryTransaction
from .runner import AsyncRunner, ThreadRunner
from .sqlite import Backoff

T = TypeVar("T")


class Retrying:
    def __init__(
        self, runner: AsyncRunner | ThreadRunner, deadline: float, disconnects: bool
    ) -> None:
        self._runner, self._deadline, self._disconnects = runner, deadline, disconnects

    async def busy(self, fn: Callable[[], Awaitable[T]], what: str) -> T:
        """Run ``fn``; SQLite busy is retried with backoff until the deadline."""
        backoff: Backoff | None = None
        while True:
            try:
                return await fn()
            except TRANSLATED as exc:
                if is_sqlite_busy(exc):
                    backoff = backoff or Backoff(self._deadline)
                    if await backoff.wait():
                        continue
                raise translate(exc, what) from exc

    async def read(self, what: str, fn: Callable[[Connection], T]) -> T:
        """Run a read; busy is retried, a dropped connection is retried once on a fresh one."""
        return await self.read_with(what, lambda: self._runner.read(fn))

    async def read_with(self, what: str, attempt: Callable[[], Awaitable[Any]]) -> T:
        backoff: Backoff | None = None
        reconnected = False
        while True:
            try:
                return cast(T, await attempt())
            except TRANSLATED as exc:
                err = translate(exc, what)
                if is_sqlite_busy(exc):
                    backoff = backoff or Backoff(self._deadline)
                    if await backoff.wait():
                        continue
                elif isinstance(err, StoreUnavailable) and not reconnected:
                    reconnected = True
                    continue
                raise err from exc

    async def write(self, what: str, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in one write transaction; rerun only when the database undid it all.

        That is: SQLite busy, deadlock/serialization victims, and (once, if
        ``retry_disconnects``) a connection lost before COMMIT was sent, since a server
        aborts an uncommitted transaction when its connection goes.
        """
        backoff: Backoff | None = None
        reconnected = not self._disconnects
        while True:
            committing = [False]
            try:
                return cast(T, await self._runner.write(fn, committing))
            except RetryTransaction:
                pass
            except TRANSLATED as exc:
                if not committing[0] and not reconnected and is_disconnect(exc):
                    reconnected = True
                    continue
                if not is_retryable(exc):
                    raise translate(exc, what, outcome_unknown=committing[0]) from exc
            backoff = backoff or Backoff(self._deadline)
            if not await backoff.wait():
                raise StoreUnavailable(f"{what}: the database stayed busy for {self._deadline}s")
