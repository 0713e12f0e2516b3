"""Execution control: interrupts at every checkpoint, shutdown, run handles, registry, events."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hookagent import (
    AgentClosed,
    AgentConfig,
    AgentRunRegistry,
    AgentState,
    DuplicateRunId,
    InMemoryAgentStateStore,
    Msg,
    RunCancelled,
    RunEvent,
    RuntimeContext,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.anyio


async def fetch(key: int) -> str:
    """Fetch a key."""
    await anyio.sleep(0)
    return f"v{key}"


def script() -> list[Any]:
    two = Msg.assistant([*tool_call("fetch", key=2).content, *tool_call("fetch", key=3).content])
    return [tool_call("fetch", key=1), two, "final answer"]


def assert_consistent(state: AgentState) -> None:
    uses = [b.id for m in state.context for b in m.tool_uses]
    results = [b.id for m in state.context for b in m.tool_results]
    assert sorted(uses) == sorted(results), (uses, results)


def assert_model_never_saw_open_tool_uses(model: ScriptedModel) -> None:
    for request in model.requests:
        open_ids: set[str] = set()
        for m in request.messages:
            open_ids |= {b.id for b in m.tool_uses}
            open_ids -= {b.id for b in m.tool_results}
        assert not open_ids


class Recorder:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.trigger: Any = None

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.events.append(event)
        if self.trigger is not None:
            self.trigger(event)


STEP_KINDS = ("model_requested", "model_responded", "tool_called", "tool_returned")
# the uninterrupted script emits these step events, in this order:
STEPS = [
    "model_requested",
    "model_responded",
    "tool_called",
    "tool_returned",
    "model_requested",
    "model_responded",
    "tool_called",
    "tool_returned",
    "tool_called",
    "tool_returned",
    "model_requested",
    "model_responded",
]


def make(model: ScriptedModel, recorder: Recorder, **kw: Any) -> AgentConfig:
    kw.setdefault("tools", [fetch])
    kw.setdefault("state_store", InMemoryAgentStateStore())
    return AgentConfig(model=model, plugins=[recorder], autoload_plugins=False, **kw)


@pytest.mark.parametrize("k", range(len(STEPS)), ids=lambda k: f"after-{k}-{STEPS[k]}")
async def test_interrupt_at_each_checkpoint(k: int) -> None:
    recorder = Recorder()
    model = ScriptedModel(script())
    config = make(model, recorder)
    agent = config.build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    seen = 0

    def trigger(event: RunEvent) -> None:
        nonlocal seen
        if event.kind in STEP_KINDS:
            if seen == k:
                assert agent.interrupt("u", "s", "please stop")
            seen += 1

    recorder.trigger = trigger
    reply = await agent.call("start", ctx)
    state = await agent.get_agent_state("u", "s")
    assert_consistent(state)
    assert reply.metadata.get("generate_reason") == "INTERRUPTED"
    assert reply is state.context[-1] or reply == state.context[-1]
    assert any(m.role == "user" and m.text == "please stop" for m in state.context)
    kinds = [e.kind for e in recorder.events]
    assert kinds.count("run_started") == 1 and kinds[-1] == "run_interrupted"
    assert kinds.count("run_interrupted") == 1 and "run_finished" not in kinds
    # the next call works normally and the model never sees an unmatched tool_use
    recorder.trigger = None
    model.steps.clear()  # whatever the interrupted run did not ask for
    model.queue("recovered")
    second = await agent.call("continue", RuntimeContext(user_id="u", session_id="s"))
    assert second.text == "recovered"
    assert_model_never_saw_open_tool_uses(model)
    assert_consistent(await agent.get_agent_state("u", "s"))


async def test_interrupt_aborts_a_running_tool_and_a_streaming_model() -> None:
    started = anyio.Event()

    async def forever() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    recorder = Recorder()
    model = ScriptedModel([tool_call("forever"), "x"])
    agent = make(model, recorder, tools=[forever]).build()
    async with anyio.create_task_group() as tg:
        replies: list[Msg] = []

        async def call() -> None:
            replies.append(await agent.call("go", RuntimeContext(user_id="u", session_id="s")))

        tg.start_soon(call)
        await started.wait()
        assert agent.interrupt("u", "s")
    state = await agent.get_agent_state("u", "s")
    assert replies[0].metadata["generate_reason"] == "INTERRUPTED"
    assert state.context[-2].tool_results[0].state == "interrupted"
    assert_consistent(state)

    chunks = anyio.Event()
    streaming = ScriptedModel(["a long streamed answer " * 20], stream=True, chunk=4, delay=0.01)
    recorder2 = Recorder()
    recorder2.trigger = lambda e: chunks.set() if e.kind == "model_delta" else None
    agent2 = make(streaming, recorder2).build()
    async with anyio.create_task_group() as tg:
        out: list[Msg] = []

        async def call2() -> None:
            out.append(await agent2.call("stream", RuntimeContext(user_id="u", session_id="s")))

        tg.start_soon(call2)
        await chunks.wait()
        agent2.interrupt("u", "s")
    deltas = [e for e in recorder2.events if e.kind == "model_delta"]
    assert 0 < len(deltas) < 100 and out[0].metadata["generate_reason"] == "INTERRUPTED"


async def test_interrupt_targets_one_session_and_spares_idle_and_queued() -> None:
    gate = anyio.Event()

    async def hold(key: int) -> str:
        """Wait for the test."""
        await gate.wait()
        return "held"

    recorder = Recorder()
    model = ScriptedModel(
        default=lambda r: tool_call("hold", key=1) if r.messages[-1].role == "user" else "done"
    )
    agent = make(model, recorder, tools=[hold]).build()
    assert not agent.interrupt("u", "idle")
    replies: dict[str, Msg] = {}

    async def call(session: str, text: str) -> None:
        replies[text] = await agent.call(text, RuntimeContext(user_id="u", session_id=session))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "a", "a1")
        tg.start_soon(call, "b", "b1")
        await anyio.sleep(0.05)
        tg.start_soon(call, "a", "a2")  # queued behind a1
        await anyio.sleep(0.05)
        assert agent.interrupt("u", "a")
        await anyio.sleep(0.05)
        gate.set()
    assert replies["a1"].metadata["generate_reason"] == "INTERRUPTED"
    assert replies["a2"].text == "done" and replies["b1"].text == "done"


async def test_shutdown_marks_only_the_running_slot_and_the_next_call_recovers() -> None:
    started = anyio.Event()

    async def long_tool() -> str:
        """Takes forever."""
        started.set()
        await anyio.sleep(60)
        return "late"

    store = InMemoryAgentStateStore()
    await store.save_if_version("u", "other", AgentState("other", "u", summary="untouched"), 0)
    recorder = Recorder()
    model = ScriptedModel([tool_call("long_tool")])
    config = make(model, recorder, tools=[long_tool], state_store=store)
    agent = config.build()
    results: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            results.append(
                await agent.call("important", RuntimeContext(user_id="u", session_id="s"))
            )

        tg.start_soon(call)
        await started.wait()
        await agent.shutdown(timeout=0.1)
    assert results[0].metadata["interrupt_reason"] == "shutdown"
    with pytest.raises(AgentClosed):
        await agent.call("after", RuntimeContext(user_id="u", session_id="s"))
    state = (await store.get_versioned("u", "s")).state
    assert state is not None and state.shutdown_interrupted
    assert_consistent(state)
    other = (await store.get_versioned("u", "other")).state
    assert other is not None and not other.shutdown_interrupted and other.summary == "untouched"
    # a new agent: the client re-sends the interrupted input; it is not duplicated
    model.queue("done at last")
    fresh = config.build()
    reply = await fresh.call("important", RuntimeContext(user_id="u", session_id="s"))
    assert reply.text == "done at last"
    state = await fresh.get_agent_state("u", "s")
    assert not state.shutdown_interrupted
    assert [m.text for m in state.context if m.role == "user"] == ["important"]
    assert_consistent(state)
    assert_model_never_saw_open_tool_uses(model)


async def test_queued_calls_are_rejected_at_shutdown() -> None:
    gate = anyio.Event()

    async def hold() -> str:
        """Wait."""
        await gate.wait()
        return "ok"

    recorder = Recorder()
    model = ScriptedModel(
        default=lambda r: tool_call("hold") if r.messages[-1].role == "user" else "done"
    )
    agent = make(model, recorder, tools=[hold]).build()
    outcomes: list[str] = []

    async def call(text: str) -> None:
        try:
            outcomes.append(
                (await agent.call(text, RuntimeContext(user_id="u", session_id="s"))).text
            )
        except AgentClosed:
            outcomes.append(f"{text}: closed")

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "first")
        await anyio.sleep(0.02)
        tg.start_soon(call, "queued")
        await anyio.sleep(0.02)

        async def stop() -> None:
            await agent.shutdown(timeout=5)

        tg.start_soon(stop)
        await anyio.sleep(0.02)
        gate.set()
    assert outcomes == ["queued: closed", "done"]


async def test_run_handles() -> None:
    recorder = Recorder()
    model = ScriptedModel(script())
    config = make(model, recorder)
    async with config.build() as agent:
        ctx = RuntimeContext(user_id="u", session_id="s", run_id="trace-42")
        run = agent.prepare_call("hi", ctx)
        assert run.run_id == ctx.run_id == "trace-42" and run.status == "pending"
        events: list[RunEvent] = []

        async def consume() -> None:
            async for event in run.events():
                events.append(event)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            run.start()
            reply = await run.result()
        assert reply.text == "final answer" and await run.result() is reply
        assert {e.run_id for e in events} == {"trace-42"}
        assert events == [e for e in recorder.events if e.run_id == "trace-42"]
        assert [e.seq for e in events] == list(range(len(events)))
        assert events[0].kind == "run_started" and events[-1].kind == "run_finished"
        with pytest.raises(Exception, match="already subscribed"):
            async for _ in run.events():
                pass

        never = agent.prepare_call("never", RuntimeContext(user_id="u", session_id="n"))
        never.cancel()
        with pytest.raises(RunCancelled):
            await never.result()
        assert not await (await agent.kernel.store()).exists("u", "n")


async def test_cancel_a_running_run_saves_its_input() -> None:
    started = anyio.Event()

    async def slow() -> str:
        """Slow."""
        started.set()
        await anyio.sleep(30)
        return "x"

    recorder = Recorder()
    config = make(ScriptedModel([tool_call("slow")]), recorder, tools=[slow])
    async with config.build() as agent:
        run = agent.prepare_call("cancel me", RuntimeContext(user_id="u", session_id="s")).start()
        await started.wait()
        run.cancel()
        with pytest.raises(RunCancelled):
            await run.result()
        state = await agent.get_agent_state("u", "s")
    assert [m.text for m in state.context] == ["cancel me"]
    kinds = [e.kind for e in recorder.events]
    assert kinds.count("run_started") == 1 and kinds.count("run_failed") == 1


async def test_registry_duplicates_listing_and_control_by_run_id() -> None:
    registry = AgentRunRegistry()
    started = anyio.Event()
    release = anyio.Event()

    async def hold() -> str:
        """Hold."""
        started.set()
        await release.wait()
        return "ok"

    recorder = Recorder()
    model = ScriptedModel(
        default=lambda r: tool_call("hold") if r.messages[-1].role == "user" else "done"
    )
    config = make(model, recorder, tools=[hold], run_registry=registry)
    first = config.build()
    async with anyio.create_task_group() as tg:
        out: list[Msg] = []

        async def call() -> None:
            out.append(
                await first.call("x", RuntimeContext(user_id="u", session_id="s1", run_id="R"))
            )

        tg.start_soon(call)
        await started.wait()
        info = registry.get("u", "R")
        assert info is not None and (info.agent_id, info.user_id, info.session_id) == (
            "agent",
            "u",
            "s1",
        )
        assert info.turn_id is not None
        assert [i.run_id for i in registry.list("u")] == ["R"]
        # another user sees nothing of u's run, and cannot reach it
        assert registry.get("mallory", "R") is None and registry.list("mallory") == []
        assert not registry.interrupt("mallory", "R") and not registry.cancel("mallory", "R")
        second = config.build()  # a new instance for a later request: no interrupt signal of R
        assert not second.interrupt("u", "s1")
        with pytest.raises(DuplicateRunId):
            await second.call("y", RuntimeContext(user_id="u", session_id="s2", run_id="R"))
        assert registry.interrupt("u", "R", "stop via registry")
        release.set()
    assert out[0].metadata["generate_reason"] == "INTERRUPTED"
    assert registry.list("u") == [] and not registry.cancel("u", "R")


async def test_registry_is_scoped_by_user_and_a_claimed_parent_is_no_child() -> None:
    """Another user's run_id is no conflict, and claiming parent_run_id == run_id does not
    make a run a child of someone else's (it would be hit by their interrupt)."""
    registry = AgentRunRegistry()
    started = anyio.Event()
    release = anyio.Event()

    async def hold() -> str:
        """Hold."""
        started.set()
        await release.wait()
        return "ok"

    model = ScriptedModel(
        default=lambda r: tool_call("hold") if r.messages[-1].role == "user" else "done"
    )
    config = make(model, Recorder(), tools=[hold], run_registry=registry)
    out: dict[str, Msg] = {}
    async with anyio.create_task_group() as tg:

        async def alice() -> None:
            ctx = RuntimeContext(user_id="alice", session_id="a", run_id="R")
            out["alice"] = await config.build().call("x", ctx)

        tg.start_soon(alice)
        await started.wait()
        forged = RuntimeContext(user_id="bob", session_id="b", run_id="R", parent_run_id="R")
        bob_model = ScriptedModel(["bob's answer"])
        bob = make(bob_model, Recorder(), tools=[], run_registry=registry).build()
        out["bob"] = await bob.call("y", forged)  # accepted: bob's run_id space is his own
        assert registry.get("bob", "R") is None  # finished
        assert [i.user_id for i in registry.list_all()] == ["alice"]
        assert not registry.get("alice", "R").is_child  # type: ignore[union-attr]
        release.set()
    assert out["bob"].text == "bob's answer"
    assert out["alice"].metadata["generate_reason"] == "COMPLETED"


async def test_every_call_has_exactly_one_start_and_one_end_under_concurrency() -> None:
    recorder = Recorder()

    def step(r: Any) -> Any:
        if r.messages[-1].role == "user":
            if "fail" in r.messages[-1].text:
                raise ValueError("scripted failure")
            return tool_call("fetch", key=1)
        return "ok"

    config = make(ScriptedModel(default=step), recorder)
    run_ids: list[str] = []

    async def one(i: int) -> None:
        ctx = RuntimeContext(user_id=f"u{i % 3}", session_id=f"s{i % 5}")
        run_ids.append(ctx.run_id)
        try:
            await config.build().call("fail" if i % 7 == 0 else "go", ctx)
        except Exception:
            pass

    async with anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(one, i)
    for run_id in run_ids:
        kinds = [e.kind for e in recorder.events if e.run_id == run_id]
        assert kinds[0] == "run_started" and kinds.count("run_started") == 1
        ends = [k for k in kinds if k in ("run_finished", "run_failed", "run_interrupted")]
        assert len(ends) == 1 and kinds[-1] == ends[0]
        for e in recorder.events:
            if e.run_id == run_id:
                assert e.agent_id == "agent" and e.user_id and e.session_id


async def test_subagent_is_part_of_the_parent_run() -> None:
    recorder = Recorder()
    child_model = ScriptedModel(["child answer"])
    child_config = make(child_model, recorder, tools=[])

    async def delegate(ctx: RuntimeContext) -> str:
        """Ask a subagent."""
        sub = ctx.derive(session_id="sub-1")
        return (await child_config.build().call("sub question", sub)).text

    registry = AgentRunRegistry()
    parent_config = make(
        ScriptedModel([tool_call("delegate"), "parent done"]),
        recorder,
        tools=[delegate],
        run_registry=registry,
    )
    child_config = make(child_model, recorder, tools=[], run_registry=registry)
    async with parent_config.build() as agent:
        ctx = RuntimeContext(user_id="u", session_id="main", run_id="P")
        run = agent.prepare_call("hi", ctx)
        seen: list[RunEvent] = []

        async def consume() -> None:
            async for e in run.events():
                seen.append(e)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            reply = await run.result()
    assert reply.text == "parent done"
    child_events = [e for e in seen if e.data.get("child")]
    assert child_events and {e.session_id for e in child_events} == {"sub-1"}
    assert {e.run_id for e in seen} == {"P"}
    assert [e.kind for e in seen][-1] == "run_finished"
    sessions = {(e.session_id, e.kind) for e in recorder.events if e.run_id == "P"}
    assert ("sub-1", "run_started") in sessions and ("main", "run_started") in sessions


async def test_subagent_on_the_parents_session_is_refused_not_deadlocked() -> None:
    recorder = Recorder()
    inner = make(ScriptedModel(["never"]), recorder, tools=[])

    async def same_session(ctx: RuntimeContext) -> str:
        """Call a subagent on this very session."""
        return (await inner.build().call("x", ctx.derive())).text

    model = ScriptedModel([tool_call("same_session"), "recovered"])
    agent = make(model, recorder, tools=[same_session], run_registry=inner.kernel.registry).build()
    with anyio.fail_after(10):
        reply = await agent.call("go", RuntimeContext(user_id="u", session_id="s"))
    assert reply.text == "recovered"
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.state == "error" and "own session_id" in result.text


async def test_one_end_event_when_loading_or_saving_fails() -> None:
    from hookagent import VersionConflict

    class Refuse:
        @hookimpl
        def hookagent_state_loaded(self) -> None:
            raise PermissionError("refused by a validation plugin")

    recorder = Recorder()
    store = InMemoryAgentStateStore()
    agent = AgentConfig(
        model=ScriptedModel(["x"]),
        plugins=[recorder, Refuse()],
        state_store=store,
        autoload_plugins=False,
    ).build()
    with pytest.raises(PermissionError):
        await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))
    assert [e.kind for e in recorder.events] == ["run_started", "state_loaded", "run_failed"]
    assert not await store.exists("u", "s")

    recorder2 = Recorder()

    async def sneak() -> str:
        """Write behind the agent's back."""
        await store.save_if_version("u", "t", AgentState("t", "u"), 0)
        return "ok"

    agent2 = AgentConfig(
        model=ScriptedModel([tool_call("sneak"), "done"]),
        tools=[sneak],
        plugins=[recorder2],
        state_store=store,
        autoload_plugins=False,
    ).build()
    with pytest.raises(VersionConflict):
        await agent2.call("hi", RuntimeContext(user_id="u", session_id="t"))
    kinds = [e.kind for e in recorder2.events]
    assert (
        kinds[0] == "run_started" and kinds[-1] == "run_failed" and kinds.count("run_failed") == 1
    )
    assert "run_finished" not in kinds
