"""A session with history segments loads cold from the Redis log: the checkpoint, the
segments it names (point reads), the commits after them."""

from __future__ import annotations

import pytest
from hookagent_session_log.testing import check_segmented_cold_load
from hookagent_store_redis import connect_log
from hookagent_store_redis.testing import STANDALONE, delete_prefix, new_prefix

pytestmark = pytest.mark.anyio


async def test_a_segmented_session_loads_cold() -> None:
    prefix = new_prefix()
    log = connect_log(STANDALONE, prefix=prefix)
    try:
        seen = await check_segmented_cold_load(log)
    finally:
        await delete_prefix(log.client, prefix)
        await log.aclose()
    assert seen["segments"] == seen["segment_events"] == 8
