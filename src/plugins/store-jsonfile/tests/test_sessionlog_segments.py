"""A session with history segments loads cold from the file logs: the checkpoint, the
segments it names (point reads), the commits after them."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hookagent_session_log.testing import check_segmented_cold_load
from hookagent_store_jsonfile import FsspecJsonFileSessionLog, JsonFileSessionLog

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("cache_slots", [None, 0])
async def test_a_segmented_session_loads_cold(tmp_path: Path, cache_slots: int | None) -> None:
    kw = {} if cache_slots is None else {"cache_slots": cache_slots}
    log = JsonFileSessionLog(tmp_path / "root", **kw)
    try:
        seen = await check_segmented_cold_load(log)
    finally:
        await log.aclose()
    assert seen["segments"] == seen["segment_events"] == 8


async def test_a_segmented_session_loads_cold_on_fsspec() -> None:
    log = FsspecJsonFileSessionLog(f"memory://log-seg-{uuid.uuid4().hex}")
    try:
        seen = await check_segmented_cold_load(log)
    finally:
        await log.aclose()
    assert seen["segments"] == seen["segment_events"] == 8
