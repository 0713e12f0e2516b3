"""The session-log conformance suite over the reference backend, with every optional hook."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest
from hookagent.sessionlog import InMemorySessionLog, LogEvent
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
