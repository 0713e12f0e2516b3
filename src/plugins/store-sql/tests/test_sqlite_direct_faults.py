"""SQLite's direct path and group commit when the file or its thread is gone: typed errors,
never a hang, one error object per caller."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from hookagent.errors import StoreUnavailable
from hookagent.state import AgentState
from hookagent_store_sql import SQLAgentStateStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("direct", [True, False])
async def test_a_failed_connect_is_store_unavailable(direct: bool, tmp_path: Path) -> None:
    """The file cannot be opened any more: loads and saves raise StoreUnavailable on both
    paths (never a raw sqlite3 error)."""
    folder = tmp_path / "db"
    folder.mkdir()
    store = SQLAgentStateStore(f"sqlite+aiosqlite:///{folder}/s.db", direct_path=direct)
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        engine = store._runner.engine  # type: ignore[attr-defined]
        await store._runner.call(engine.dispose)  # type: ignore[attr-defined]
        shutil.rmtree(folder)
        with pytest.raises(StoreUnavailable):
            await store.get_versioned("u", "s2")
        with pytest.raises(StoreUnavailable):
            await store.save_if_version("u", "s3", AgentState("s3", "u"), 0)
    finally:
        await store.aclose()


@pytest.mark.timeout(60)
async def test_saves_after_the_thread_is_gone_fail_and_never_hang(tmp_path: Path) -> None:
    """The file's executor is shut down (interpreter shutdown from another thread's loop):
    every save raises StoreUnavailable; none waits for a flush that will never run."""
    store = SQLAgentStateStore(f"sqlite+aiosqlite:///{tmp_path}/s.db")
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        store._runner._executor.shutdown(wait=True)  # type: ignore[attr-defined]
        for i in range(3):
            with pytest.raises(StoreUnavailable):
                await asyncio.wait_for(
                    store.save_if_version("u", f"n{i}", AgentState(f"n{i}", "u"), 0), 5
                )
        batch = store._direct._batch  # type: ignore[union-attr]
        assert batch._pending == [] and batch._scheduled is False
        with pytest.raises(StoreUnavailable):  # loads too: typed, not RuntimeError
            await store.get_versioned("u", "other")
    finally:
        store._closed = True  # its thread is gone: only the engine is left to close


async def test_each_save_of_a_failed_batch_gets_its_own_error(tmp_path: Path) -> None:
    """A batch that fails as a whole (here: no connection) gives every save its own exception
    object, so one caller's traceback is not another's."""
    store = SQLAgentStateStore(f"sqlite+aiosqlite:///{tmp_path}/s.db")
    try:
        await store.save_if_version("u", "s", AgentState("s", "u"), 0)
        batch = store._direct._batch  # type: ignore[union-attr]

        class NoConnection:
            def raw_connection(self) -> Any:
                raise RuntimeError("no connection")

        batch._engine = NoConnection()
        gate = threading.Event()
        store._runner.submit(lambda: gate.wait(10))  # type: ignore[attr-defined]
        saves = [
            asyncio.ensure_future(store.save_if_version("u", f"b{i}", AgentState(f"b{i}", "u"), 0))
            for i in range(3)
        ]
        await asyncio.sleep(0.1)  # all three queued behind the gate: one batch
        gate.set()
        errors = await asyncio.gather(*saves, return_exceptions=True)
        assert all(isinstance(e, StoreUnavailable) for e in errors), errors
        assert len({id(e) for e in errors}) == 3
    finally:
        await store.aclose()
