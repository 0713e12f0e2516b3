"""The kernel's seams for the harness plugins: what one plugin offers another without either
importing the other (docs/hooks.md, "Seams for plugins")."""

from __future__ import annotations

from typing import Any

import pytest
from hookagent import (
    REASONING,
    Agent,
    AgentConfig,
    AgentRun,
    Approve,
    HookContractError,
    InMemoryAgentStateStore,
    Middleware,
    ModelRequest,
    Msg,
    RunEvent,
    RuntimeContext,
    ask,
    emit_event,
    estimate_tokens,
    hookimpl,
)
from hookagent.store.open import store_registration
from hookagent.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.anyio


def make(*plugins: object, **kw: Any) -> AgentConfig:
    kw.setdefault("state_store", InMemoryAgentStateStore())
    return AgentConfig(plugins=list(plugins), autoload_plugins=False, **kw)


def test_plugin_options_are_checked_when_the_configuration_is_made() -> None:
    assert AgentConfig().plugin_options == {}
    assert AgentConfig(plugin_options={"tasks": {"show": "todos"}}).plugin_options["tasks"]
    for bad in ({"tasks": "todos"}, {1: {}}, ["tasks"]):
        with pytest.raises(TypeError, match="plugin_options maps a plugin's name"):
            AgentConfig(plugin_options=bad)  # type: ignore[arg-type]


async def test_the_running_agent_is_in_the_context_and_restored_after() -> None:
    seen: list[object] = []

    async def who(ctx: RuntimeContext) -> str:
        """Which agent runs me."""
        seen.append(ctx.get(Agent))
        return "me"

    config = make(model=ScriptedModel([tool_call("who"), "done"]), tools=[who])
    agent = config.build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    await agent.call("hi", ctx)
    assert seen == [agent] and ctx.get(Agent) is None and ctx.get(AgentRun) is None


async def test_a_subagent_sees_itself_and_the_parent_gets_its_agent_back() -> None:
    seen: list[tuple[str, object]] = []

    async def where(ctx: RuntimeContext) -> str:
        """Name the agent running this tool."""
        seen.append(("where", ctx.get(Agent)))
        return "here"

    child_cfg = make(
        name="child", model=ScriptedModel([tool_call("where"), "sub done"]), tools=[where]
    )
    child = child_cfg.build()

    async def research(ctx: RuntimeContext) -> str:
        """Ask the subagent."""
        sub = ctx.derive(session_id="sub")
        text = (await child.call("go", sub)).text
        seen.append(("after", ctx.get(Agent)))
        return text

    parent = make(model=ScriptedModel([tool_call("research"), "done"]), tools=[research]).build()
    await parent.call("hi", RuntimeContext(user_id="u", session_id="main"))
    assert seen == [("where", child), ("after", parent)]


class Recorder:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    @hookimpl
    def hookagent_on_run_event(self, event: RunEvent) -> None:
        self.events.append(event)


async def test_a_plugin_emits_its_own_run_events() -> None:
    results: list[bool] = []

    async def change(ctx: RuntimeContext) -> str:
        """Change a task."""
        results.append(await emit_event(ctx, "task_changed", revision=3))
        return "changed"

    recorder = Recorder()
    config = make(recorder, model=ScriptedModel([tool_call("change"), "done"]), tools=[change])
    agent = config.build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    run = agent.prepare_call("hi", ctx)
    await run.result()
    [event] = [e for e in recorder.events if e.kind == "task_changed"]
    assert results == [True] and event.data == {"revision": 3}
    assert (event.run_id, event.turn_id, event.session_id) == (ctx.run_id, ctx.turn_id, "s")
    assert "task_changed" in [e.kind async for e in run.events()]
    seqs = [e.seq for e in recorder.events]
    assert seqs == sorted(seqs) == list(range(len(seqs)))
    # outside a call: nothing to attach it to
    assert await emit_event(RuntimeContext(user_id="u", session_id="s"), "task_changed") is False
    for forged in ("run_finished", "tool_called", ""):
        with pytest.raises(HookContractError, match="kind of your own"):
            await emit_event(ctx, forged)


async def test_model_requests_say_their_purpose_and_evolve_without_copying() -> None:
    history = [Msg.user(str(i)) for i in range(3)]
    request = ModelRequest(messages=history)
    assert request.purpose == REASONING == "reasoning"
    summary = request.evolve(purpose="summary", system="summarise")
    assert (summary.purpose, summary.system, request.purpose, request.system) == (
        "summary",
        "summarise",
        "reasoning",
        None,
    )
    assert summary.messages is request.messages  # shared: shapers replace, never mutate


async def test_shaping_middlewares_run_in_declared_order_and_never_touch_history() -> None:
    order: list[str] = []

    def shaper(name: str, rank: int) -> Middleware:
        async def shape(request: ModelRequest, ctx: RuntimeContext, call_next: Any) -> Any:
            order.append(name)
            system = (request.system or "") + f"[{name}]"
            return await call_next(request.evolve(system=system))

        return Middleware(shape, order=rank)

    class Shapers:
        @hookimpl
        def hookagent_wrap_model_call(self) -> Any:
            return shaper("projection", 300)

    class Memory:
        @hookimpl
        def hookagent_wrap_model_call(self) -> Any:
            return shaper("memory", 100)

    model = ScriptedModel(default="ok")
    agent = make(Shapers(), Memory(), model=model).build()
    await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))
    assert order == ["memory", "projection"]
    assert model.requests[0].system == "[memory][projection]"
    state = await agent.get_agent_state("u", "s")
    assert [m.text for m in state.context] == ["hi", "ok"]


async def test_remember_travels_with_an_approval_to_the_approved_call() -> None:
    calls: list[tuple[bool, bool]] = []

    class Confirm:
        @hookimpl
        def hookagent_wrap_tool_call(self) -> Any:
            async def mw(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
                calls.append((call.approved, call.remember))
                if not call.approved:
                    return ask(call, "ok?")
                return await call_next(call)

            return mw

    async def deploy() -> str:
        """Deploy."""
        return "deployed"

    model = ScriptedModel([tool_call("deploy")], default="done")
    agent = make(Confirm(), model=model, tools=[deploy]).build()
    ctx = RuntimeContext(user_id="u", session_id="s")
    reply = await agent.call("go", ctx)
    [pending] = reply.metadata["pending"]
    await agent.call(
        answers=[Approve(pending["tool_use_id"], remember=True)], ctx=ctx.derive(run_id=None)
    )
    assert calls == [(False, False), (True, True)]
    with pytest.raises(TypeError):
        Approve("x", remember="yes")  # type: ignore[arg-type]


def test_store_locality_is_known_before_the_store_opens(tmp_path: Any) -> None:
    assert make().kernel.store_locality == "process"
    file_cfg = AgentConfig(state_store=str(tmp_path / "s"), autoload_plugins=True)
    assert file_cfg.kernel.store_locality == "host"
    assert AgentConfig(state_store="sqlite+aiosqlite:///x.db").kernel.store_locality == "host"
    assert AgentConfig(state_store="memory://x").kernel.store_locality == "process"
    for shared in ("redis://127.0.0.1:6379/0", "postgresql://127.0.0.1/test"):
        assert AgentConfig(state_store=shared).kernel.store_locality == "shared"
    pm = file_cfg.kernel.pm  # s3fs is not installed here: the scheme's declaration itself
    assert store_registration(pm, "s3://bucket/p")[2] == "shared"

    class Odd:
        locality = "galaxy"

    with pytest.raises(HookContractError, match="locality 'galaxy'"):
        make(state_store=Odd()).build()


def test_the_models_window_and_the_default_token_estimate() -> None:
    assert (
        estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    )
    model = ScriptedModel(default="ok")
    assert make(model=model).kernel.context_window is None
    model.context_window = 32_000  # type: ignore[attr-defined]
    assert make(model=model).kernel.context_window == 32_000


async def test_a_store_knows_the_run_it_loads_for_and_nothing_else_looks_like_it() -> None:
    from hookagent import InMemoryAgentStateStore, loading_run_context

    seen: list[tuple[str, str | None]] = []

    class Watching(InMemoryAgentStateStore):
        async def get_versioned(
            self, user_id: str, session_id: str, key: str = "agent_state"
        ) -> Any:
            run = loading_run_context()
            seen.append(("load", run.run_id if run else None))
            return await super().get_versioned(user_id, session_id, key)

    store = Watching()

    async def peek(ctx: RuntimeContext) -> str:
        """Reads its own session from inside the run."""
        seen.append(("tool", getattr(loading_run_context(), "run_id", None)))
        await ctx.get(Agent).get_agent_state("u", "s")  # type: ignore[union-attr]
        return "ok"

    from hookagent.testing import ScriptedModel, tool_call

    cfg = make(model=ScriptedModel([tool_call("peek"), "done"]), tools=[peek], state_store=store)
    run_ctx = RuntimeContext(user_id="u", session_id="s")
    await cfg.build().call("hi", run_ctx)
    assert seen == [("load", run_ctx.run_id), ("tool", None), ("load", None)]
    assert loading_run_context() is None
