"""A session with history segments loads cold from the SQL log (SQLite, PostgreSQL,
MariaDB): the checkpoint, the segments it names (point reads), the commits after them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookagent_session_log.testing import check_segmented_cold_load
from logenv import fresh_log

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mariadb"])
async def test_a_segmented_session_loads_cold(dialect: str, tmp_path: Path) -> None:
    async with fresh_log(dialect, tmp_path) as log:
        seen = await check_segmented_cold_load(log)
    assert seen["segments"] == seen["segment_events"] == 8
