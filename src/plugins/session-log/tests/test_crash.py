"""SIGKILL at every recorder step of a run with a tool, on file, Redis and PostgreSQL: the
session rebuilds, a killed tool is uncertain, a new run refuses until it is reconciled and
then completes, and no acknowledged event is lost or duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from hookagent import AgentConfig, RuntimeContext, ToolResultBlock
from hookagent.messages import new_id
from hookagent.sessionlog import open_session_log
from hookagent.testing import ScriptedModel
from hookagent_session_log import SessionLogAdmin, UncertainToolCalls, plugin

HERE = Path(__file__).resolve().parent
POINTS = ["model", "before-dispatch", "mid-tool", "after-result", "next-model", "final-commit"]
UNCERTAIN = {"mid-tool", "after-result"}  # dispatched, no durable outcome
LEASE = 1.0


def backends(tmp: Path) -> dict[str, str]:
    return {
        "file": f"file://{tmp}/log",
        "redis": os.environ.get("HOOKAGENT_TEST_REDIS_LOG", "redis://127.0.0.1:6379/0"),
        "postgresql": os.environ.get(
            "HOOKAGENT_TEST_PG_LOG", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
        ),
    }


def run_until(url: str, session: str, point: str) -> list[tuple[int, int]]:
    """Start the run, SIGKILL it at ``point``; the commits it saw acknowledged."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "crash_process.py"), url, session, point, str(LEASE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged: list[tuple[int, int]] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        if line.startswith("COMMIT"):
            _, first, last = line.split()
            acknowledged.append((int(first), int(last)))
        elif line.strip() == f"AT {point}":
            proc.send_signal(signal.SIGKILL)
            break
        assert time.monotonic() < deadline
    else:
        raise AssertionError(
            f"the run never reached {point}: {proc.stderr.read() if proc.stderr else ''}"
        )
    proc.wait(timeout=30)
    return acknowledged


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("backend", ["file", "redis", "postgresql"])
def test_a_run_killed_at_each_step_rebuilds_and_recovers(
    backend: str, point: str, tmp_path: Path
) -> None:
    url = backends(tmp_path)[backend]
    session = f"crash-{new_id()[:12]}"
    acknowledged = run_until(url, session, point)
    assert acknowledged, "the run committed nothing before its step"
    time.sleep(LEASE + 0.3)  # the dead run's lease runs out
    anyio.run(_recover, url, session, point, acknowledged)


async def _recover(url: str, session: str, point: str, acknowledged: list[tuple[int, int]]) -> None:
    log = await open_session_log(url)
    try:
        admin = SessionLogAdmin(log)
        events = await admin.events("crash", session)
        head = await log.head("crash", session)
        assert [e.seq for e in events] == list(range(1, head.seq + 1))  # contiguous
        assert len({e.event_id for e in events}) == len(events)  # nothing twice
        assert head.seq == acknowledged[-1][1]  # every acknowledged commit, nothing else

        config = AgentConfig(
            model=ScriptedModel(["after the crash"]),
            session_log=log,
            plugins=[plugin],
            autoload_plugins=False,
        )
        agent = config.build()
        ctx = RuntimeContext(user_id="crash", session_id=session)
        uncertain = await admin.uncertain("crash", session)
        if point in UNCERTAIN:
            assert [u.name for u in uncertain] == ["effect"]
            with pytest.raises(UncertainToolCalls):
                await agent.call("next", ctx)
            await admin.reconcile("crash", session, {uncertain[0].id: "error"}, "the bank says no")
        else:
            assert uncertain == []
        reply = await agent.call("next", RuntimeContext(user_id="crash", session_id=session))
        assert reply.text == "after the crash"
        history = (await agent.get_agent_state("crash", session)).context
        results = [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]
        uses = [u for m in history for u in m.tool_uses]
        assert [r.id for r in results] == [u.id for u in uses]  # every call closed, once
        expected = {
            "model": [],
            "before-dispatch": [],  # the model's answer was never durable
            "mid-tool": ["error"],
            "after-result": ["error"],  # reconciled: the outcome was not durable yet
            "next-model": ["success"],
            "final-commit": ["success"],
        }[point]
        assert [r.state for r in results] == expected
        again = await admin.events("crash", session)
        assert [e.event_id for e in again[: len(events)]] == [e.event_id for e in events]
    finally:
        await log.aclose()
