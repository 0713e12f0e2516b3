"""The optional hooks of a session-log backend's conformance class, and the suite's helpers.

Each hook defaults to "not available"; a check that needs one is then *skipped with a reason
that starts with "not run:"* (``pytest -rs`` lists them), never passed silently. A hook may
be a coroutine function or a plain function.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ..sessionlog.base import LogEvent, LogHead, LogWriter, SessionLog

NOT_RUN_HANDLE = "not run: define another_handle(log) to give a second handle on the same data"
NOT_RUN_ORPHAN = (
    "not run: define plant_orphan(log, user_id, session_id, batch_id, events) to write a "
    "commit at head.seq + 1 without moving the head"
)
NOT_RUN_HEAD = (
    "not run: define plant_head(log, user_id, session_id, seq) to move the head without a commit"
)
LONG = 30.0
"""A lease that never expires during a check."""


def batch(tag: str, count: int, kind: str = "message/appended") -> list[LogEvent]:
    """``count`` events whose payload names the batch and the position in it."""
    return [LogEvent(kind, {"tag": tag, "i": i}) for i in range(count)]


def tags(events: Sequence[LogEvent]) -> list[str]:
    """Each event as ``tag.i`` (what a check compares)."""
    return [f"{e.payload.get('tag')}.{e.payload.get('i')}" for e in events]


def seqs(events: Sequence[LogEvent]) -> list[int]:
    return [e.seq for e in events]


async def snapshot(log: SessionLog, user_id: str, session_id: str) -> tuple[LogHead, list[str]]:
    """The head and every committed event (as tags): what "nothing changed" compares."""
    return await log.head(user_id, session_id), tags(await log.read_after(user_id, session_id, 0))


async def written(
    log: SessionLog, user_id: str, session_id: str, *sizes: int, owner: str = "w", tag: str = "b"
) -> LogWriter:
    """Acquire and commit one batch per size (``tag0``, ``tag1``, ...); the writer holds on."""
    writer = await log.acquire(user_id, session_id, owner, LONG)
    seq = (await log.head(user_id, session_id)).seq
    for n, size in enumerate(sizes):
        result = await log.commit(writer, f"{tag}{n}", seq, batch(f"{tag}{n}", size))
        seq = result.last_seq
    return writer


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class LogHooks:
    """Override these in your ``SessionLogConformance`` subclass (docs/session-log.md)."""

    lease_short = 0.3
    """Seconds: the lease of the expiry checks (they sleep a bit longer than this)."""
    clock_tolerance = 2.0
    """Seconds a backend's clock (a database server's) may differ from this process's."""

    async def another_handle(self, log: Any) -> Any:
        """A second, independent handle on ``log``'s data (a new instance, connection and
        cache, as another process would have). The suite closes it. Not defined: the
        cross-handle checks are not run."""
        raise NotImplementedError

    async def plant_orphan(
        self,
        log: Any,
        user_id: str,
        session_id: str,
        batch_id: str,
        events: Sequence[LogEvent],
    ) -> None:
        """Write ``events`` as the commit ``batch_id`` at ``head.seq + 1`` in your raw layout,
        WITHOUT moving the head (a crash between the two writes of a commit)."""
        raise NotImplementedError

    async def plant_head(self, log: Any, user_id: str, session_id: str, seq: int) -> None:
        """Move the head's seq to ``seq`` without writing a commit (a head pointing at a
        commit that is missing)."""
        raise NotImplementedError

    # ---- what the checks call

    def _defined(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(LogHooks, name)

    @asynccontextmanager
    async def other(self, log: SessionLog) -> AsyncIterator[SessionLog]:
        """A second handle, closed on exit; skips the check ("not run") without one."""
        if not self._defined("another_handle"):
            pytest.skip(NOT_RUN_HANDLE)
        handle: SessionLog = await _maybe(self.another_handle(log))
        try:
            yield handle
        finally:
            await handle.aclose()

    @asynccontextmanager
    async def other_or_same(self, log: SessionLog) -> AsyncIterator[SessionLog]:
        """A second handle when the class gives one, else ``log`` itself."""
        if not self._defined("another_handle"):
            yield log
            return
        async with self.other(log) as handle:
            yield handle

    async def orphan(
        self,
        log: SessionLog,
        user_id: str,
        session_id: str,
        batch_id: str,
        events: Sequence[LogEvent],
    ) -> None:
        if not self._defined("plant_orphan"):
            pytest.skip(NOT_RUN_ORPHAN)
        await _maybe(self.plant_orphan(log, user_id, session_id, batch_id, events))

    async def bad_head(self, log: SessionLog, user_id: str, session_id: str, seq: int) -> None:
        if not self._defined("plant_head"):
            pytest.skip(NOT_RUN_HEAD)
        await _maybe(self.plant_head(log, user_id, session_id, seq))

    async def expire(self) -> None:
        """Sleep past ``lease_short``."""
        await anyio.sleep(self.lease_short * 1.5 + 0.1)
