"""The kernel's session-log conformance suite on both file backends, with every hook: a
second handle is another instance on the same files (its own fds and caches, as another
process has), an orphan and a bad head are the bytes a killed writer or a lost commit leave
(``plant_orphan``/``plant_head``, written behind the log's back)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hookagent.sessionlog import LogEvent
from hookagent.testing import SessionLogConformance
from hookagent_store_jsonfile import FsspecJsonFileSessionLog, JsonFileSessionLog


class Hooks(SessionLogConformance):
    async def another_handle(self, log: Any) -> Any:
        return log.another_handle()

    async def plant_orphan(
        self, log: Any, user_id: str, session_id: str, batch_id: str, events: Sequence[LogEvent]
    ) -> None:
        log.plant_orphan(user_id, session_id, batch_id, events)

    async def plant_head(self, log: Any, user_id: str, session_id: str, seq: int) -> None:
        log.plant_head(user_id, session_id, seq)


class TestJsonFileSessionLog(Hooks):
    @pytest.fixture
    async def log(self, tmp_path: Path) -> AsyncIterator[JsonFileSessionLog]:
        log = JsonFileSessionLog(tmp_path / "root")
        yield log
        await log.aclose()


class TestJsonFileSessionLogUncached(Hooks):
    """No fd cache: every call opens the session (the path a cold process takes)."""

    @pytest.fixture
    async def log(self, tmp_path: Path) -> AsyncIterator[JsonFileSessionLog]:
        log = JsonFileSessionLog(tmp_path / "root", cache_slots=0)
        yield log
        await log.aclose()


class TestFsspecSessionLogMultiOnLocalFs(Hooks):
    """The conditional-write protocol (one head object per version) on the local fsspec
    filesystem, where exclusive create is O_EXCL (a hard link here)."""

    @pytest.fixture
    async def log(self, tmp_path: Path) -> AsyncIterator[FsspecJsonFileSessionLog]:
        fs = fsspec.filesystem("file")
        log = FsspecJsonFileSessionLog(str(tmp_path / "root"), writers="multi", fs=fs)
        yield log
        await log.aclose()


class TestFsspecSessionLogSingleOnMemory(Hooks):
    @pytest.fixture
    async def log(self) -> AsyncIterator[FsspecJsonFileSessionLog]:
        log = FsspecJsonFileSessionLog(f"memory://conformance-{uuid.uuid4().hex}")
        yield log
        await log.aclose()
