"""Uncertain tools: a dispatch with no outcome refuses new runs until it is reconciled."""

from __future__ import annotations

import anyio
import pytest
from hookagent import AgentState, Msg, ToolUseBlock
from hookagent.codec import state_to_dict
from hookagent.errors import LogCorrupt
from hookagent.sessionlog import CHECKPOINT, InMemorySessionLog, LogEvent
from hookagent.testing import ScriptedModel
from hookagent_session_log import (
    ReconcileMismatch,
    SessionLogAdmin,
    ToolOutcome,
    UncertainToolCalls,
    UnknownRequiredEvent,
)
from hookagent_session_log import catalogue as c
from sessionlog_support import ctx, make_config

pytestmark = pytest.mark.anyio


async def crashed_mid_tool(log: InMemorySessionLog, *uses: ToolUseBlock, dispatched: int) -> None:
    """What a run killed inside its ``dispatched``-th tool leaves in the log."""
    run, turn = "run-1", "turn-1"
    state = AgentState(session_id="s", user_id="u")
    events = [
        c.event(c.RUN_STARTED, {}, run_id=run, turn_id=turn),
        c.message_event(Msg.user("do it"), run, turn),
        c.event(CHECKPOINT, {"state": state_to_dict(state, with_context=False), "base": 0}),
        c.event(c.MODEL_DISPATCH, {}, run_id=run, turn_id=turn),
        c.message_event(Msg.assistant(list(uses)), run, turn),
    ]
    for use in uses[:dispatched]:
        events.append(c.event(c.TOOL_DISPATCH, {"id": use.id, "name": use.name}, run_id=run))
    writer = await log.acquire("u", "s", run, 0.05)  # the dead run's lease: soon expired
    await log.commit(writer, "b1", 0, events)
    await anyio.sleep(0.06)  # the process is gone: its lease runs out


async def test_a_killed_tool_is_uncertain_and_refuses_runs_until_reconciled(
    log: InMemorySessionLog,
) -> None:
    a, b = ToolUseBlock("t-a", "pay", {"amount": 5}), ToolUseBlock("t-b", "mail", {})
    await crashed_mid_tool(log, a, b, dispatched=1)
    model = ScriptedModel(["after the crash"])
    agent = make_config(log, model).build()
    with pytest.raises(UncertainToolCalls) as refused:
        await agent.call("next", ctx())
    assert [u.id for u in refused.value.uncertain] == ["t-a"]
    assert "hookagent log reconcile" in str(refused.value)
    assert model.remaining == 1  # the model was never asked
    with pytest.raises(UncertainToolCalls):  # admin changes are refused too
        await agent.update_agent_state(
            "u", "x", lambda s: s.put_section("note", {}), session_id="s"
        )

    admin = SessionLogAdmin(log)
    assert [u.name for u in await admin.uncertain("u", "s")] == ["pay"]
    with pytest.raises(ReconcileMismatch, match="missing"):
        await admin.reconcile("u", "s", {}, "checked")
    with pytest.raises(ReconcileMismatch, match="not uncertain"):
        await admin.reconcile("u", "s", {"t-a": "success", "t-b": "success"}, "checked")
    with pytest.raises(ReconcileMismatch, match="reason"):
        await admin.reconcile("u", "s", {"t-a": "success"}, " ")
    await admin.reconcile("u", "s", {"t-a": ToolOutcome("success", "paid, per the bank")}, "bank")

    reply = await agent.call("next", ctx())
    assert reply.text == "after the crash"
    history = (await agent.get_agent_state("u", "s")).context
    results = history[2].content
    assert [(r.id, r.state, r.text) for r in results] == [  # type: ignore[union-attr]
        ("t-a", "success", "paid, per the bank"),
        ("t-b", "interrupted", "not run: the run stopped before this call started"),
    ]
    assert await admin.uncertain("u", "s") == []
    types = [e.type for e in await admin.events("u", "s")]
    assert types.count("recovery/applied") == 1 and types.count("tool/result") == 1


async def test_a_tool_crashed_after_its_result_is_not_uncertain(log: InMemorySessionLog) -> None:
    use = ToolUseBlock("t-a", "lookup", {"key": 1})
    await crashed_mid_tool(log, use, dispatched=1)
    from hookagent import TextBlock, ToolResultBlock

    result = ToolResultBlock("t-a", "lookup", (TextBlock("v1"),), "success")
    writer = await log.acquire("u", "s", "run-2", 5)
    head = await log.head("u", "s")
    await log.commit(writer, "b2", head.seq, [c.result_event(result, "run-2", None)])
    await log.release(writer)
    state = await make_config(log, ScriptedModel(["x"])).build().get_agent_state("u", "s")
    assert list(state.context[-1].content) == [result]  # the recorded result closes the step


async def test_an_unknown_required_event_refuses_recovery(log: InMemorySessionLog) -> None:
    writer = await log.acquire("u", "s", "w", 5)
    await log.commit(writer, "b", 0, [LogEvent("future/fact", {"x": 1}, required=True)])
    with pytest.raises(UnknownRequiredEvent, match="future/fact"):
        await make_config(log, ScriptedModel(["x"])).build().get_agent_state("u", "s")


async def test_an_unknown_optional_event_is_kept_and_ignored(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel(["one", "two"])).build()
    await agent.call("a", ctx())
    seq = await SessionLogAdmin(log).append(
        "u", "s", [LogEvent("acme/review_note", {"ok": True}, required=False)]
    )
    await agent.call("b", ctx())
    events = await SessionLogAdmin(log).events("u", "s", types=["acme/"])
    assert [e.seq for e in events] == [seq]
    assert [m.text for m in (await agent.get_agent_state("u", "s")).context] == [
        "a",
        "one",
        "b",
        "two",
    ]


async def test_a_malformed_fact_fails_closed(log: InMemorySessionLog) -> None:
    writer = await log.acquire("u", "s", "w", 5)
    await log.commit(writer, "b", 0, [LogEvent(c.MESSAGE, {"m": {"role": "nobody"}})])
    with pytest.raises(LogCorrupt, match="message/appended"):
        await make_config(log, ScriptedModel(["x"])).build().get_agent_state("u", "s")


async def test_a_read_during_a_live_run_sees_its_tools_in_flight_not_uncertain(
    log: InMemorySessionLog,
) -> None:
    import anyio
    from hookagent.testing import tool_call

    seen: list[int] = []

    async def slow() -> str:
        """Takes a moment."""
        reader = make_config(log, ScriptedModel(["x"])).build()  # another process's read
        state = await reader.get_agent_state("u", "s")
        seen.append(len(state.context[-1].tool_uses))
        with pytest.raises(Exception, match="held by"):  # a change must wait for the run
            await reader.update_agent_state("u", "x", lambda s: None, session_id="s")
        await anyio.sleep(0)
        return "done"

    model = ScriptedModel([tool_call("slow"), "finished"])
    assert (
        await make_config(log, model, tools=[slow]).build().call("go", ctx())
    ).text == "finished"
    assert seen == [1]
