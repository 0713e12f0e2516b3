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
        "message/appended",  # the assistant's tool call
        "tool/dispatch",
        "message/appended",  # the tool results (the outcome rode this commit: no tool/result)
        "model/dispatch",
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


async def test_the_heartbeat_keeps_a_long_model_call_s_lease(log: InMemorySessionLog) -> None:
    """A model call three times the lease: nobody else can take the session meanwhile."""
    import anyio
    from hookagent import LeaseHeld

    other: list[str] = []

    class Slow:
        async def generate(self, request: ModelRequest, ctx: Any) -> ModelResponse:
            for _ in range(6):
                await anyio.sleep(0.5)
                try:
                    await log.acquire("u", "s", "intruder", 5)
                    other.append("took it")
                except LeaseHeld:
                    other.append("refused")
            return ModelResponse(Msg.assistant("slow but sure"))

    options = {"session-log": {"lease_seconds": 1}}
    reply = await make_config(log, Slow(), plugin_options=options).build().call("hi", ctx())
    assert reply.text == "slow but sure"
    assert other == ["refused"] * 6


async def test_durability_tools_commits_before_tools_and_at_the_end_only() -> None:
    log = FailingLog(10_000)  # counts commits, never fails
    model = ScriptedModel([tool_call("lookup", key=1), "done"])
    options = {"session-log": {"durability": "tools"}}
    await make_config(log, model, plugin_options=options).build().call("hi", ctx())
    assert log.commits == 2  # the tool's dispatch; its result with the end (the default: 4)
    kinds = await types(log)
    assert kinds.count("model/dispatch") == 2 and kinds[-1] == "run/finished"
    assert kinds.index("model/dispatch") < kinds.index("tool/dispatch")


async def test_durability_is_checked() -> None:
    from hookagent import ConfigurationError

    with pytest.raises(ConfigurationError, match="durability"):
        make_config(
            InMemorySessionLog(),
            ScriptedModel(["x"]),
            plugin_options={"session-log": {"durability": "never"}},
        ).build()


async def test_a_calls_writes_do_not_grow_with_the_history() -> None:
    from hookagent.sessionlog import encode_batch

    class Sizing(InMemorySessionLog):
        def __init__(self) -> None:
            super().__init__()
            self.written = 0

        async def commit(
            self, writer: Any, batch_id: str, expected: int, events: Any, **kw: Any
        ) -> Any:
            self.written += len(encode_batch(events))
            return await super().commit(writer, batch_id, expected, events, **kw)

    log = Sizing()
    model = ScriptedModel(default="a reply of a fixed size")
    agent = make_config(log, model).build()
    sizes = []
    for i in range(300):
        before = log.written
        await agent.call(f"message {i:04d}", ctx())
        sizes.append(log.written - before)
    # every 256 messages (128 calls) a call's commit also holds a history segment: those
    # 256 messages' records, the same size each time, whatever the history's length
    segmented = [i for i, n in enumerate(sizes) if n > 2 * sizes[1]]
    assert len(segmented) == 2
    assert abs(sizes[segmented[1]] - sizes[segmented[0]]) <= 64
    plain = [n for i, n in enumerate(sizes) if i and i not in segmented]
    assert max(plain) - min(plain) <= 16  # float timestamps vary by a few bytes
    assert max(sizes[-10:]) <= min(sizes[1:10]) * 1.05  # call 300 writes what call 2 did
