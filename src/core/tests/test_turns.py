"""Turns: suspension, answers keyed by tool_use id, outcomes, and the edges around them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hookagent import (
    AgentConfig,
    AgentState,
    AnswerError,
    Approve,
    DuplicateAnswer,
    ExternalResult,
    InMemoryAgentStateStore,
    Msg,
    Reject,
    RunEvent,
    RuntimeContext,
    ToolSuspended,
    TurnMismatch,
    UnknownInteraction,
    ask,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.anyio
RAN: list[str] = []


async def deploy(env: str) -> str:
    """Deploy to an environment."""
    RAN.append(env)
    return f"deployed to {env}"


async def lookup(key: str) -> str:
    """Look a key up (harmless)."""
    return f"value of {key}"


class AskBeforeDeploy:
    """A confirm policy: every deploy waits for a person; approved calls pass."""

    @hookimpl
    def hookagent_wrap_tool_call(self) -> Any:
        async def middleware(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
            if call.use.name == "deploy" and not call.approved:
                return ask(call, f"deploy to {call.use.input['env']}?", {"rule": "deploy"})
            return await call_next(call)

        return middleware


class Events:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.events.append(event)

    def kinds(self, run_id: str) -> list[str]:
        return [e.kind for e in self.events if e.run_id == run_id]


def echo_last_result(request: Any) -> str:
    last = request.messages[-1]
    return "; ".join(f"{r.state}: {r.text}" for r in last.tool_results) or f"echo {last.text}"


def config(model: ScriptedModel, *plugins: object, store: Any = None, **kw: Any) -> AgentConfig:
    kw.setdefault("tools", [deploy, lookup])
    return AgentConfig(
        model=model,
        plugins=[AskBeforeDeploy(), *plugins],
        state_store=store or InMemoryAgentStateStore(),
        autoload_plugins=False,
        **kw,
    )


def assert_valid(state: AgentState) -> None:
    """Every tool_use has exactly one result, except those a suspended turn holds."""
    held = {p.tool_use_id for p in state.turn_context.pending} | {
        r.id for r in state.turn_context.results
    }
    uses = [b.id for m in state.context for b in m.tool_uses]
    results = [b.id for m in state.context for b in m.tool_results]
    assert sorted(results) == sorted(set(results)), "a tool_use answered twice"
    assert sorted(set(uses) - held) == sorted(results), (uses, results, held)


def assert_model_never_saw_open_tool_uses(model: ScriptedModel) -> None:
    for request in model.requests:
        open_ids: set[str] = set()
        for m in request.messages:
            open_ids |= {b.id for b in m.tool_uses}
            open_ids -= {b.id for b in m.tool_results}
        assert not open_ids, "the model was shown an unanswered tool_use"


async def suspend(agent: Any, session: str = "s") -> tuple[Msg, RuntimeContext]:
    ctx = RuntimeContext(user_id="u", session_id=session)
    reply = await agent.call("ship it", ctx)
    assert reply.metadata["generate_reason"] == "SUSPENDED"
    assert reply.metadata["suspend_kind"] == "PERMISSION_ASKING"
    return reply, ctx


async def test_suspend_then_approve_runs_the_tool_once_in_the_same_turn() -> None:
    RAN.clear()
    events = Events()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    agent = config(model, events).build()
    reply, ctx = await suspend(agent)
    [pending] = reply.metadata["pending"]
    assert (pending["tool"], pending["kind"], pending["prompt"]) == (
        "deploy",
        "confirm",
        "deploy to prod?",
    )
    assert RAN == [] and len(model.requests) == 1
    state = await agent.get_agent_state("u", "s")
    assert state.turn_context.turn_id == ctx.turn_id and state.context[-1].tool_uses
    assert_valid(state)
    kinds = events.kinds(ctx.run_id)
    assert kinds[-1] == "run_suspended" and "tool_suspended" in kinds
    assert events.events[-1].data["outcome"] == "SUSPENDED"

    resume = ctx.derive(run_id=None)  # same turn, new run
    done = await agent.call(answers=[Approve(pending["tool_use_id"])], ctx=resume)
    assert done.metadata["generate_reason"] == "COMPLETED"
    assert done.text == "success: deployed to prod" and RAN == ["prod"]
    assert resume.turn_id == ctx.turn_id and resume.run_id != ctx.run_id
    ends = [e for e in events.events if e.is_end]
    assert [(e.kind, e.turn_id) for e in ends] == [
        ("run_suspended", ctx.turn_id),
        ("run_finished", ctx.turn_id),
    ]
    assert all(e.turn_id == ctx.turn_id for e in events.events)
    state = await agent.get_agent_state("u", "s")
    assert not state.turn_context.suspended and state.turn_context.turn_id is None
    assert_valid(state)
    assert_model_never_saw_open_tool_uses(model)


async def test_reject_gives_a_denied_result_the_model_sees() -> None:
    RAN.clear()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    agent = config(model).build()
    reply, ctx = await suspend(agent)
    uid = reply.metadata["pending"][0]["tool_use_id"]
    done = await agent.call(answers=[Reject(uid, "not on a Friday")], ctx=ctx.derive(run_id=None))
    assert RAN == [] and done.text == "denied: not on a Friday"
    assert done.metadata["generate_reason"] == "COMPLETED"  # a person's no reaches the model
    assert_valid(await agent.get_agent_state("u", "s"))
    assert_model_never_saw_open_tool_uses(model)


async def test_a_tool_waits_for_an_external_result() -> None:
    async def run_ci(branch: str) -> str:
        """Start CI; the result comes back later."""
        raise ToolSuspended(f"CI started for {branch}", {"job": 42})

    model = ScriptedModel([tool_call("run_ci", branch="main")], default=echo_last_result)
    agent = config(model, tools=[run_ci]).build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    reply = await agent.call("test main", ctx)
    assert reply.metadata["suspend_kind"] == "TOOL_SUSPENDED"
    [pending] = reply.metadata["pending"]
    assert (pending["kind"], pending["data"]) == ("external_result", {"job": 42})
    with pytest.raises(AnswerError, match="does not answer a 'external_result'"):
        await agent.call(answers=[Approve(pending["tool_use_id"])], ctx=ctx.derive(run_id=None))
    done = await agent.call(
        answers=[ExternalResult(pending["tool_use_id"], "412 passed")], ctx=ctx.derive(run_id=None)
    )
    assert done.text == "success: 412 passed"
    assert_valid(await agent.get_agent_state("u", "s"))


async def test_bad_answers_are_typed_errors_and_change_nothing() -> None:
    RAN.clear()
    store = InMemoryAgentStateStore()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    agent = config(model, store=store).build()
    reply, ctx = await suspend(agent)
    uid = reply.metadata["pending"][0]["tool_use_id"]
    before = (await store.get_versioned("u", "s")).version
    again = ctx.derive(run_id=None)
    with pytest.raises(UnknownInteraction, match="no pending interaction for tool_use 'nope'"):
        await agent.call(answers=[Approve("nope")], ctx=again)
    with pytest.raises(DuplicateAnswer):
        await agent.call(answers=[Approve(uid), Reject(uid)], ctx=ctx.derive(run_id=None))
    with pytest.raises(TurnMismatch):
        other = RuntimeContext(user_id="u", session_id="s", turn_id="another-turn")
        await agent.call(answers=[Approve(uid)], ctx=other)
    with pytest.raises(AnswerError, match="not both"):
        await agent.call("hello", ctx.derive(run_id=None), answers=[Approve(uid)])
    assert (await store.get_versioned("u", "s")).version == before and RAN == []
    # the right answer still works, once; a second answer to the same id matches nothing
    await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    with pytest.raises(UnknownInteraction, match="has no pending interaction"):
        await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert RAN == ["prod"]


async def test_new_input_while_pending_denies_the_pending_calls_and_starts_a_new_turn() -> None:
    RAN.clear()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    agent = config(model).build()
    _, ctx = await suspend(agent)
    new = ctx.derive(run_id=None)  # even a context that still names the suspended turn
    reply = await agent.call("never mind, what time is it?", new)
    assert reply.text == "echo never mind, what time is it?" and RAN == []
    assert new.turn_id != ctx.turn_id
    state = await agent.get_agent_state("u", "s")
    denied = [r for m in state.context for r in m.tool_results]
    assert [(r.state, r.text) for r in denied] == [
        ("denied", "not run: the user sent new input instead of answering")
    ]
    assert not state.turn_context.suspended
    assert_valid(state)
    assert_model_never_saw_open_tool_uses(model)


async def test_interrupt_and_shutdown_while_suspended_touch_nothing() -> None:
    RAN.clear()
    store = InMemoryAgentStateStore()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    cfg = config(model, store=store)
    agent = cfg.build()
    reply, ctx = await suspend(agent)
    version = (await store.get_versioned("u", "s")).version
    assert not agent.interrupt("u", "s")  # nothing runs: a suspended session is idle
    await agent.shutdown(1.0)
    assert (await store.get_versioned("u", "s")).version == version
    later = cfg.build()  # a new instance, as after a restart
    uid = reply.metadata["pending"][0]["tool_use_id"]
    done = await later.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert done.metadata["generate_reason"] == "COMPLETED" and RAN == ["prod"]


async def test_interrupt_while_answering_closes_the_step() -> None:
    started, release = anyio.Event(), anyio.Event()

    async def slow_deploy(env: str) -> str:
        """Deploy slowly."""
        started.set()
        await release.wait()
        return "never"

    class AskAll:
        @hookimpl
        def hookagent_wrap_tool_call(self) -> Any:
            async def middleware(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
                return await call_next(call) if call.approved else ask(call, "ok?")

            return middleware

    model = ScriptedModel([tool_call("slow_deploy", env="x")], default=echo_last_result)
    agent = AgentConfig(
        model=model,
        tools=[slow_deploy],
        plugins=[AskAll()],
        state_store=InMemoryAgentStateStore(),
        autoload_plugins=False,
    ).build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    reply = await agent.call("go", ctx)
    uid = reply.metadata["pending"][0]["tool_use_id"]
    out: list[Msg] = []
    async with anyio.create_task_group() as tg:

        async def answer() -> None:
            out.append(await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None)))

        tg.start_soon(answer)
        await started.wait()
        assert agent.interrupt("u", "s", "stop that")
    assert out[0].metadata["generate_reason"] == "INTERRUPTED"
    state = await agent.get_agent_state("u", "s")
    assert not state.turn_context.suspended
    assert [r.state for m in state.context for r in m.tool_results] == ["interrupted"]
    assert_valid(state)
    model.queue("fine")
    await agent.call("next", RuntimeContext(user_id="u", session_id="s"))
    assert_model_never_saw_open_tool_uses(model)


async def test_clear_context_while_suspended_drops_the_pending_turn() -> None:
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    agent = config(model).build()
    reply, ctx = await suspend(agent)
    assert await agent.clear_context("u", "s")
    state = await agent.get_agent_state("u", "s")
    assert list(state.context) == [] and not state.turn_context.suspended
    uid = reply.metadata["pending"][0]["tool_use_id"]
    with pytest.raises(UnknownInteraction):
        await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert (await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))).text == "echo hi"


async def test_a_step_with_several_calls_suspends_one_and_keeps_the_others_in_order() -> None:
    RAN.clear()
    step = Msg.assistant(
        [
            *tool_call("lookup", key="a").content,
            *tool_call("deploy", env="prod").content,
            *tool_call("lookup", key="b").content,
        ]
    )
    model = ScriptedModel([step], default=echo_last_result)
    agent = config(model).build()
    reply, ctx = await suspend(agent)
    state = await agent.get_agent_state("u", "s")
    assert [r.text for r in state.turn_context.results] == ["value of a", "value of b"]
    uid = reply.metadata["pending"][0]["tool_use_id"]
    done = await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert done.text == "success: value of a; success: deployed to prod; success: value of b"
    assert_valid(await agent.get_agent_state("u", "s"))


async def test_an_approved_call_is_never_asked_again() -> None:
    class AlwaysAsk:
        @hookimpl
        def hookagent_wrap_tool_call(self) -> Any:
            async def middleware(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
                return ask(call, "again?")  # a buggy policy that ignores call.approved

            return middleware

    RAN.clear()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    agent = config(model, AlwaysAsk()).build()
    reply, ctx = await suspend(agent)
    uid = reply.metadata["pending"][0]["tool_use_id"]
    done = await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert done.text == "error: a middleware asked for confirmation again after approval"
    assert RAN == []


async def test_a_suspended_turn_round_trips_through_json_and_another_store_handle() -> None:
    """The peers' bug: approvals re-asked or ignored after a JSON round trip."""
    RAN.clear()
    model = ScriptedModel([tool_call("deploy", env="prod")], default=echo_last_result)
    first = InMemoryAgentStateStore()
    agent = config(model, store=first).build()
    reply, ctx = await suspend(agent)
    copy = AgentState.from_json((await agent.get_agent_state("u", "s")).to_json())
    second = InMemoryAgentStateStore()
    await second.save_if_version("u", "s", copy, 0)
    other = config(model, store=second).build()
    uid = reply.metadata["pending"][0]["tool_use_id"]
    done = await other.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert done.text == "success: deployed to prod" and RAN == ["prod"]


async def test_max_iterations_counts_the_whole_turn_across_runs() -> None:
    model = ScriptedModel(
        [tool_call("deploy", env="prod"), tool_call("lookup", key="k"), "never asked"]
    )
    agent = config(model, max_iterations=2).build()
    reply, ctx = await suspend(agent)  # model call 1 of the turn
    uid = reply.metadata["pending"][0]["tool_use_id"]
    done = await agent.call(answers=[Approve(uid)], ctx=ctx.derive(run_id=None))
    assert done.metadata["generate_reason"] == "MAX_ITERATIONS"  # call 2 was the turn's last
    assert len(model.requests) == 2
    assert_valid(await agent.get_agent_state("u", "s"))
