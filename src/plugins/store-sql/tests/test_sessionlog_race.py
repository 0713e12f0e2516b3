"""Two real processes race on one session's log on PostgreSQL: whoever lost the lease has
its commits refused (``LogFenced``), and the log is contiguous and holds exactly the
acknowledged commits, each where its acknowledgement said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from logenv import fresh_log

pytestmark = pytest.mark.anyio
WORKER = Path(__file__).with_name("log_race_worker.py")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_two_processes_race_on_one_session(tmp_path: Path) -> None:
    async with fresh_log("postgresql", tmp_path) as log:
        url = log.engine.url.render_as_string(hide_password=False)
        names = log.tables.names
        procs = [
            subprocess.Popen(
                [sys.executable, str(WORKER), url, names.prefix, names.schema or "", who, "4"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for who in ("p1", "p2")
        ]
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            results.append(json.loads(out))
        outcomes = [r for rs in results for r in rs]
        acked = {r[1]: r[2] for r in outcomes if r[0] == "ok"}
        refused = {r[1] for r in outcomes if r[0] != "ok"}
        events = await log.read_after("u", "race", 0)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))  # contiguous
        assert {e.event_id: e.seq for e in events} == acked  # exactly the acknowledged ones
        assert not refused & {e.event_id for e in events}
        fenced = [r for r in outcomes if r[0] == "LogFenced"]
        by = {e.payload["by"] for e in events}
        assert len(fenced) >= 2 and by == {"p1", "p2"}, (len(fenced), by)
        assert all(r[0] in ("ok", "LogFenced") for r in outcomes), outcomes
        head = await log.head("u", "race")
        assert head.seq == len(events) and head.commit_id == events[-1].event_id
        print(f"{len(acked)} acknowledged, {len(fenced)} fenced, epoch {head.epoch}")
