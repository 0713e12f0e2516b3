"""The session-log conformance suite over the reference backend, with every optional hook."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio.lowlevel
import pytest
from hookagent.sessionlog import InMemorySessionLog, LogEvent, LogWriter
from hookagent.testing import SessionLogConformance


class TestInMemorySessionLog(SessionLogConformance):
    @pytest.fixture
    async def log(self) -> AsyncIterator[InMemorySessionLog]:
        log = InMemorySessionLog()
        yield log
        await log.aclose()

    async def another_handle(self, log: InMemorySessionLog) -> InMemorySessionLog:
        return log.another_handle()

    async def plant_orphan(
        self,
        log: InMemorySessionLog,
        user_id: str,
        session_id: str,
        batch_id: str,
        events: Sequence[LogEvent],
    ) -> None:
        log.plant_orphan(user_id, session_id, batch_id, events)

    async def plant_head(
        self, log: InMemorySessionLog, user_id: str, session_id: str, seq: int
    ) -> None:
        log.plant_head(user_id, session_id, seq)


class YieldingLog(InMemorySessionLog):
    """The reference with the suspension points of a networked backend around each call
    (its atomic step stays atomic): the race checks then see real interleavings, and must
    not fail a correct backend because of them."""

    _turns = itertools.count()

    async def _pause(self) -> None:
        for _ in range(next(self._turns) % 3):
            await anyio.lowlevel.checkpoint()

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        await self._pause()
        result = await getattr(super(), name)(*args, **kwargs)
        await self._pause()
        return result

    async def acquire(self, user_id: str, session_id: str, owner: str, lease: float) -> LogWriter:
        return await self._call("acquire", user_id, session_id, owner, lease)  # type: ignore[no-any-return]

    async def commit(self, writer: LogWriter, *args: Any, **kwargs: Any) -> Any:
        return await self._call("commit", writer, *args, **kwargs)

    async def head(self, user_id: str, session_id: str) -> Any:
        return await self._call("head", user_id, session_id)

    async def read_after(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("read_after", *args, **kwargs)


class TestYieldingSessionLog(TestInMemorySessionLog):
    @pytest.fixture
    async def log(self) -> AsyncIterator[InMemorySessionLog]:
        log = YieldingLog()
        yield log
        await log.aclose()
