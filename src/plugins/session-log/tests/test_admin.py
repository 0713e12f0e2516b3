"""Admin changes, identities and the operator's tools: one writer at a time, never stale."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookagent import InMemoryAgentStateStore, LeaseHeld, VersionConflict
from hookagent.sessionlog import InMemorySessionLog
from hookagent.testing import ScriptedModel
from hookagent_session_log import (
    FileWatermark,
    JsonlSink,
    LogNotEmpty,
    RunAlreadyRecorded,
    SessionLogAdmin,
    TurnAlreadyCompleted,
)
from sessionlog_support import ctx, make_config

pytestmark = pytest.mark.anyio


async def test_an_admin_change_is_one_commit_with_its_reason(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel(["one"])).build()
    await agent.call("a", ctx())
    changed = await agent.update_agent_state(
        "u", "grant", lambda s: s.put_section("permission_context", {"rules": []}), session_id="s"
    )
    assert changed
    events = await SessionLogAdmin(log).events("u", "s", types=["admin/", "permission/", "state/"])
    assert [e.type for e in events][-3:] == [
        "permission/changed",
        "state/checkpoint",
        "admin/updated",
    ]
    assert events[-1].payload == {"reason": "grant"}
    state = await make_config(log, ScriptedModel(["x"])).build().get_agent_state("u", "s")
    assert state.extensions["permission_context"] == {"rules": []}
    assert (await log.head("u", "s")).owner is None


async def test_clear_context_goes_through_the_log(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel(["one", "two"])).build()
    await agent.call("a", ctx())
    assert await agent.clear_context("u", "s")
    await agent.call("b", ctx())
    other = make_config(log, ScriptedModel(["x"])).build()
    assert [m.text for m in (await other.get_agent_state("u", "s")).context] == ["b", "two"]
    types = [e.type for e in await SessionLogAdmin(log).events("u", "s")]
    assert "context/replaced" in types


async def test_an_admin_change_is_refused_while_a_run_holds_the_lease(
    log: InMemorySessionLog,
) -> None:
    agent = make_config(log, ScriptedModel(["one"])).build()
    await agent.call("a", ctx())
    await log.acquire("u", "s", "a-run-elsewhere", 60)
    with pytest.raises(LeaseHeld, match="a-run-elsewhere"):
        await agent.update_agent_state("u", "x", lambda s: None, session_id="s")
    with pytest.raises(LeaseHeld):
        await agent.call("b", ctx())


async def test_a_stale_snapshot_is_refused_on_replace(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel(["one", "two"])).build()
    await agent.call("a", ctx())
    store = await agent.kernel.store()
    snapshot = await store.get_versioned("u", "s")
    await agent.call("b", ctx())  # the log moved on
    snapshot.state.put_section("note", {"n": 1})  # type: ignore[union-attr]
    with pytest.raises(VersionConflict):
        await store.save_if_version("u", "s", snapshot.state, snapshot.version)  # type: ignore[arg-type]
    assert "note" not in (await agent.get_agent_state("u", "s")).extensions


async def test_a_run_id_is_used_once_and_a_completed_turn_is_not_run_again(
    log: InMemorySessionLog,
) -> None:
    agent = make_config(log, ScriptedModel(["one", "two", "three"])).build()
    first = ctx(run_id="run-fixed")
    await agent.call("a", first)
    with pytest.raises(RunAlreadyRecorded, match="run-fixed"):
        await agent.call("again", ctx(run_id="run-fixed"))
    with pytest.raises(TurnAlreadyCompleted):
        await agent.call("resent", ctx(turn_id=first.turn_id))
    assert (await agent.call("fresh", ctx())).text == "two"


async def test_fork_import_and_export_state(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel(["one", "fork reply"])).build()
    await agent.call("a", ctx())
    admin = SessionLogAdmin(log)
    await admin.fork("u", "s", "s-copy")
    with pytest.raises(LogNotEmpty):
        await admin.fork("u", "s", "s-copy")
    forked = await agent.get_agent_state("u", "s-copy")
    assert [m.text for m in forked.context] == ["a", "one"] and forked.session_id == "s-copy"
    assert (await agent.call("b", ctx("s-copy"))).text == "fork reply"
    assert len((await agent.get_agent_state("u", "s")).context) == 2  # the source is untouched

    legacy = InMemoryAgentStateStore()
    state = await admin.export_state("u", "s")
    from hookagent.codec import state_from_dict, state_to_dict

    moved = state_from_dict(
        {**state_to_dict(state, with_context=False), "session_id": "old"},
        context=list(state.context),
    )
    await legacy.save_if_version("u", "old", moved, 0)
    await admin.import_from_store(legacy, "u", "old")
    assert (await agent.get_agent_state("u", "old")).context == state.context


async def test_export_to_a_sink_is_idempotent_with_a_durable_watermark(
    log: InMemorySessionLog, tmp_path: Path
) -> None:
    agent = make_config(log, ScriptedModel(["one", "two"])).build()
    await agent.call("a", ctx())
    admin = SessionLogAdmin(log)
    sink, mark = JsonlSink(tmp_path / "events.jsonl"), FileWatermark(tmp_path / "mark")
    first = await admin.export("u", "s", sink, mark)
    assert first == (await log.head("u", "s")).seq and await mark.get() == first
    await mark.set(2)  # a crash after writing, before the watermark moved
    again = await admin.export("u", "s", JsonlSink(tmp_path / "events.jsonl"), mark)
    assert again == first - 2  # resent, and skipped by the sink
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == first  # each event once
    await agent.call("b", ctx())
    assert await admin.export("u", "s", sink, mark) == (await log.head("u", "s")).seq - first
