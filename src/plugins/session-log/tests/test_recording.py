"""The recorder: what a run writes, in which order, and what is durable before what."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import ModelRequest, ModelResponse, Msg, StoreUnavailable
from hookagent.sessionlog import InMemorySessionLog
from hookagent.testing import ScriptedModel, tool_call
from hookagent_session_log import SessionLogAdmin
from sessionlog_support import ctx, make_config

pytestmark = pytest.mark.anyio


async def types(log: InMemorySessionLog, session: str = "s") -> list[str]:
    return [e.type for e in await SessionLogAdmin(log).events("u", session)]


async def test_a_run_with_a_tool_is_recorded_fact_by_fact(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel([tool_call("lookup", key=1), "done"])).build()
    reply = await agent.call("hi", ctx())
    assert reply.text == "done"
    assert await types(log) == [
        "run/started",
        "message/appended",  # the input
        "state/checkpoint",  # the first flush: no checkpoint yet
        "model/dispatch",
        "model/end",
        "message/appended",  # the assistant's tool call
        "tool/dispatch",
        "tool/result",
        "message/appended",  # the tool results
        "model/dispatch",
        "model/end",
        "message/appended",  # the reply
        "run/finished",
    ]
    head = await log.head("u", "s")
    assert head.owner is None and head.checkpoint_seq == 3  # the lease ended with the run
    events = await SessionLogAdmin(log).events("u", "s")
    assert {e.run_id for e in events} == {events[0].run_id}
    assert events[-1].payload == {"outcome": "success", "completed": True}


async def test_a_second_call_writes_only_what_it_added(log: InMemorySessionLog) -> None:
    agent = make_config(log, ScriptedModel(["one", "two"])).build()
    await agent.call("a", ctx())
    before = (await log.head("u", "s")).seq
    await agent.call("b", ctx())
    added = await SessionLogAdmin(log).events("u", "s", after=before)
    assert [e.type for e in added] == [
        "run/started",
        "message/appended",
        "model/dispatch",
        "model/end",
        "message/appended",
        "run/finished",
    ]  # no checkpoint (nothing but the history changed), no history re-written


async def test_the_dispatch_is_durable_before_the_model_is_called(log: InMemorySessionLog) -> None:
    seen: list[str] = []

    class Looking:
        async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
            events = await SessionLogAdmin(log).events("u", "s")
            seen.append(events[-1].type)
            assert events[-2].type == "state/checkpoint" or events[-2].type == "message/appended"
            return ModelResponse(Msg.assistant("ok"))

    await make_config(log, Looking()).build().call("hi", ctx())
    assert seen == ["model/dispatch"]


async def test_the_dispatch_is_durable_before_the_tool_runs(log: InMemorySessionLog) -> None:
    seen: list[list[str]] = []

    async def probe() -> str:
        """Read the log from inside the tool."""
        seen.append([e.type for e in await SessionLogAdmin(log).events("u", "s")][-2:])
        return "probed"

    model = ScriptedModel([tool_call("probe"), "done"])
    await make_config(log, model, tools=[probe]).build().call("hi", ctx())
    assert seen == [["message/appended", "tool/dispatch"]]


class FailingLog(InMemorySessionLog):
    """Commits fail from the ``n``-th on (the backend went away)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, self.commits = n, 0

    async def commit(self, *args: Any, **kw: Any) -> Any:
        self.commits += 1
        if self.commits >= self.n:
            raise StoreUnavailable("the log backend is down")
        return await super().commit(*args, **kw)


async def test_a_failed_dispatch_commit_means_the_model_is_never_called() -> None:
    log = FailingLog(1)
    model = ScriptedModel(["never"])
    with pytest.raises(StoreUnavailable):
        await make_config(log, model).build().call("hi", ctx())
    assert model.remaining == 1  # not called
    head = await log.head("u", "s")
    assert head.seq == 0 and head.owner is None  # the lease was given back


async def test_a_failed_dispatch_commit_means_the_tool_never_runs() -> None:
    ran: list[int] = []

    async def effect() -> str:
        """A side effect."""
        ran.append(1)
        return "done"

    log = FailingLog(2)  # the model's dispatch commits, the tool's does not
    model = ScriptedModel([tool_call("effect"), "after"])
    with pytest.raises(StoreUnavailable):
        await make_config(log, model, tools=[effect]).build().call("hi", ctx())
    assert ran == []


async def test_a_failed_run_releases_the_lease_and_seals_its_run_id(
    log: InMemorySessionLog,
) -> None:
    class Broken:
        async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
            raise RuntimeError("model crashed")

    c = ctx()
    with pytest.raises(Exception, match="model crashed"):
        await make_config(log, Broken()).build().call("hi", c)
    head = await log.head("u", "s")
    assert head.owner is None
    assert await log.is_sealed("u", "s", c.run_id)
    # the input was kept (the kernel's rule for a failed call), as facts in the log
    state = await make_config(log, ScriptedModel(["x"])).build().get_agent_state("u", "s")
    assert [m.text for m in state.context] == ["hi"]
