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


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_a_point_read_takes_the_drivers_call_and_reads_what_read_after_reads(
    dialect: str, tmp_path: Path
) -> None:
    """``read_after(seq, 1)`` (how a cold load reads its checkpoint and segments) on the
    driver's own ``LIMIT 1`` statement: the same event as the SQLAlchemy path, every seq."""
    from typing import Any

    async with fresh_log(dialect, tmp_path) as log:
        seen = await check_segmented_cold_load(log, calls=3)
        driver = log._pg if log._pg is not None else log._lite
        assert driver is not None
        calls: list[bool] = []
        if log._pg is not None:  # PostgreSQL: every point read is one read_at statement
            real_at = log._pg.read_at

            async def read_at(u: str, s: str, afters: list[int]) -> Any:
                calls.append(len(afters) == 1)
                return await real_at(u, s, afters)

            log._pg.read_at = read_at  # type: ignore[method-assign]
        else:
            real = driver.read

            async def read(u: str, s: str, after: int, one: bool = False) -> Any:
                calls.append(one)
                return await real(u, s, after, one)

            driver.read = read  # type: ignore[method-assign]
        for seq in range(seen["head"] + 1):
            one = await log.read_after("seg-user", "seg-session", seq, 1)
            two = await log.read_after("seg-user", "seg-session", seq, 2)
            assert one == two[:1]
        assert calls == [True] * (seen["head"] + 1)
