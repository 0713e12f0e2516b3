"""Two real processes take turns writing one session's log on Redis, each pausing past its
lease: the fenced writer's commits are refused, every acknowledged commit is in the log at
the seqs it was told, nothing else is, and the seqs are contiguous."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hookagent_store_redis import connect_log
from hookagent_store_redis.testing import STANDALONE, delete_prefix, new_prefix

USER, SESSION = "lost-update-user", "one-slot"  # workers.py's


@pytest.mark.anyio
@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_two_processes_race_on_one_session_log(
    topology: str, request: pytest.FixtureRequest, run_workers: Callable[..., list[dict[str, Any]]]
) -> None:
    url = STANDALONE if topology == "standalone" else request.getfixturevalue("redis_cluster").url
    prefix = new_prefix()
    log = connect_log(url, prefix=prefix)
    try:
        results = run_workers("log", url, prefix, 2, 6)
        acked = [tuple(a) for r in results for a in r["acked"]]
        fenced = sum(int(r["fenced"]) for r in results)
        print(f"acked {len(acked)} fenced {fenced}")
        assert fenced >= 1, results  # the pauses made a takeover: some commit was refused
        assert all(int(r["held"]) >= 1 for r in results), results  # they did contend
        events = await log.read_after(USER, SESSION, 0)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert len(events) == 2 * len(acked)  # no refused commit's events
        by_seq = {e.seq: e.payload["token"] for e in events}
        for bid, first, last in acked:
            assert [by_seq[s] for s in range(first, last + 1)] == [f"{bid}/0", f"{bid}/1"]
        head = await log.head(USER, SESSION)
        assert head.seq == len(events) and head.epoch == 12  # 2 workers x 6 tenures
    finally:
        await delete_prefix(log.client, prefix)
        await log.aclose()
