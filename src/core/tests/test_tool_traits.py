"""Tool traits (read_only, concurrency_safe, timeout), parallel tool calls, the hook relay."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hookagent import (
    AgentConfig,
    HookContractError,
    InMemoryAgentStateStore,
    Msg,
    RunEvent,
    RuntimeContext,
    Tool,
    ToolDefinitionError,
    ToolRegister,
    hookimpl,
    tool,
)
from hookagent.testing import HookRecorder, ScriptedModel, tool_call

pytestmark = pytest.mark.anyio


def step(*calls: Msg) -> Msg:
    return Msg.assistant([b for c in calls for b in c.content])


def echo(request: Any) -> str:
    return " | ".join(r.text for r in request.messages[-1].tool_results) or "done"


def test_traits_from_the_decorator_and_from_register() -> None:
    @tool(read_only=True, concurrency_safe=True, timeout=2.5)
    def peek(path: str) -> str:
        """Peek at a file."""
        return path

    t = Tool.from_function(peek)
    assert (t.read_only, t.concurrency_safe, t.timeout, t.name) == (True, True, 2.5, "peek")
    assert peek("x") == "x"  # the decorator leaves the function as it was
    plain = Tool.from_function(lambda: None, name="plain")
    assert (plain.read_only, plain.concurrency_safe, plain.timeout) == (False, False, None)
    assert Tool.from_function(peek, read_only=False).read_only is False  # explicit wins
    with pytest.raises(ToolDefinitionError, match="timeout"):
        Tool.from_function(peek, timeout=0)

    class Plugin:
        @hookimpl
        def hookagent_register_tools(self, register: ToolRegister) -> None:
            register(peek, name="peek2", concurrency_safe=False)

    cfg = AgentConfig(
        plugins=[Plugin()], autoload_plugins=False, state_store=InMemoryAgentStateStore()
    )
    registered = cfg.kernel.tools["peek2"]
    assert (registered.read_only, registered.concurrency_safe) == (True, False)


async def test_middlewares_see_the_traits() -> None:
    seen: dict[str, bool] = {}

    @tool(read_only=True)
    async def look(key: str) -> str:
        """Look."""
        return key

    class Spy:
        @hookimpl
        def hookagent_wrap_tool_call(self) -> Any:
            async def middleware(call: Any, ctx: RuntimeContext, call_next: Any) -> Any:
                seen[call.use.name] = call.tool.read_only
                return await call_next(call)

            return middleware

    async def write(key: str) -> str:
        """Write."""
        return key

    model = ScriptedModel(
        [step(tool_call("look", key="a"), tool_call("write", key="b"))], default=echo
    )
    cfg = AgentConfig(
        model=model,
        tools=[look, write],
        plugins=[Spy()],
        autoload_plugins=False,
        state_store=InMemoryAgentStateStore(),
    )
    await cfg.build().call("go", RuntimeContext(user_id="u", session_id="s"))
    assert seen == {"look": True, "write": False}


def slow_tools(log: list[str], gate: dict[str, anyio.Event]) -> list[Any]:
    def make(name: str) -> Any:
        @tool(concurrency_safe=True)
        async def slow(n: int) -> str:
            log.append(f"start {name}")
            gate[name].set()
            await anyio.sleep(0.2)
            log.append(f"end {name}")
            return f"{name}{n}"

        slow.__name__ = name
        slow.__doc__ = f"Slow {name}."
        return slow

    return [make(n) for n in ("a", "b", "c")]


async def test_concurrency_safe_calls_of_one_step_run_at_once_results_in_order() -> None:
    log: list[str] = []
    gate = {n: anyio.Event() for n in "abc"}
    events: list[RunEvent] = []

    class Events:
        @hookimpl
        def hookagent_on_run_event(self, event: RunEvent) -> None:
            events.append(event)

    calls = step(tool_call("c", n=1), tool_call("a", n=2), tool_call("b", n=3))
    model = ScriptedModel([calls], default=echo)
    cfg = AgentConfig(
        model=model,
        tools=slow_tools(log, gate),
        plugins=[Events()],
        autoload_plugins=False,
        state_store=InMemoryAgentStateStore(),
    )
    started = anyio.current_time()
    reply = await cfg.build().call("go", RuntimeContext(user_id="u", session_id="s"))
    elapsed = anyio.current_time() - started
    # all three started before any ended: they ran at the same time (~0.2 s, not 0.6 s)
    assert sorted(log[:3]) == ["start a", "start b", "start c"], log
    assert reply.text == "c1 | a2 | b3"  # results in the model's order
    per_tool = [(e.kind, e.data.get("tool")) for e in events if e.kind.startswith("tool_")]
    for name in "abc":
        assert per_tool.count(("tool_called", name)) == 1
        assert per_tool.count(("tool_returned", name)) == 1
    print(f"three 200 ms tools in one step: {elapsed * 1000:.0f} ms")


async def test_not_every_tool_safe_means_one_after_another_unless_configured() -> None:
    for setting, expect_parallel in ((None, False), (True, True), (False, False)):
        log: list[str] = []
        gate = {n: anyio.Event() for n in "abc"}
        tools = slow_tools(log, gate)

        def make_unsafe(log: list[str]) -> Any:
            async def unsafe(n: int) -> str:
                """Not concurrency-safe."""
                log.append("unsafe")
                return "u"

            return unsafe

        unsafe_tool = make_unsafe(log)

        model = ScriptedModel([step(tool_call("a", n=1), tool_call("unsafe", n=2))], default=echo)
        cfg = AgentConfig(
            model=model,
            tools=[*tools, unsafe_tool],
            parallel_tool_calls=setting,
            autoload_plugins=False,
            state_store=InMemoryAgentStateStore(),
        )
        await cfg.build().call("go", RuntimeContext(user_id="u", session_id="s"))
        parallel = log.index("unsafe") < log.index("end a")
        assert parallel is expect_parallel, (setting, log)


async def test_an_interrupt_closes_every_open_parallel_call() -> None:
    log: list[str] = []
    gate = {n: anyio.Event() for n in "abc"}
    events: list[RunEvent] = []

    class Events:
        @hookimpl
        def hookagent_on_run_event(self, event: RunEvent) -> None:
            events.append(event)

    model = ScriptedModel([step(tool_call("a", n=1), tool_call("b", n=2), tool_call("c", n=3))])
    agent = AgentConfig(
        model=model,
        tools=slow_tools(log, gate),
        plugins=[Events()],
        autoload_plugins=False,
        state_store=InMemoryAgentStateStore(),
    ).build()
    out: list[Msg] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            out.append(await agent.call("go", RuntimeContext(user_id="u", session_id="s")))

        tg.start_soon(call)
        for name in "abc":
            await gate[name].wait()
        assert agent.interrupt("u", "s")
    assert out[0].metadata["generate_reason"] == "INTERRUPTED" and not any("end" in x for x in log)
    state = await agent.get_agent_state("u", "s")
    assert [r.state for m in state.context for r in m.tool_results] == ["interrupted"] * 3
    ends = [e for e in events if e.kind == "tool_failed"]
    assert sorted(e.data["tool"] for e in ends) == ["a", "b", "c"]
    assert all(e.data["state"] == "interrupted" for e in ends)


async def test_a_tool_over_its_timeout_gets_an_error_result() -> None:
    @tool(timeout=0.05)
    async def stuck() -> str:
        """Never returns in time."""
        await anyio.sleep(10)
        return "late"

    model = ScriptedModel([tool_call("stuck")], default=echo)
    cfg = AgentConfig(
        model=model, tools=[stuck], autoload_plugins=False, state_store=InMemoryAgentStateStore()
    )
    reply = await cfg.build().call("go", RuntimeContext(user_id="u", session_id="s"))
    assert reply.text == "tool 'stuck' timed out after 0.05 s"


async def test_a_hook_recorder_sees_every_hook_call_of_a_run_run_events_included() -> None:
    model = ScriptedModel([tool_call("lookup", key="k")], default=echo)

    async def lookup(key: str) -> str:
        """Look up."""
        return key

    cfg = AgentConfig(
        model=model, tools=[lookup], autoload_plugins=False, state_store=InMemoryAgentStateStore()
    )
    recorder = HookRecorder(cfg.kernel.pm)
    ctx = RuntimeContext(user_id="u", session_id="s")
    await cfg.build().call("go", ctx)
    recorder.close()
    names = recorder.names()
    for hook in (
        "hookagent_state_loaded",
        "hookagent_build_model_request",
        "hookagent_before_persist",
        "hookagent_after_persist",
    ):
        assert hook in names, hook
    kinds = [c.kwargs["event"].kind for c in recorder.named("hookagent_on_run_event")]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert {"tool_called", "tool_returned", "model_requested", "state_persisted"} <= set(kinds)


async def test_a_contract_error_names_hook_and_plugin() -> None:
    class Sloppy:
        @hookimpl
        async def hookagent_state_loaded(self, state: Any, ctx: Any) -> Any:
            return "oops"

    cfg = AgentConfig(
        model=ScriptedModel(default="x"),
        plugins=[Sloppy()],
        autoload_plugins=False,
        state_store=InMemoryAgentStateStore(),
    )
    with pytest.raises(HookContractError) as info:
        await cfg.build().call("go", RuntimeContext(user_id="u", session_id="s"))
    assert info.value.hook == "hookagent_state_loaded"
    assert info.value.plugin is not None and info.value.plugin in {
        cfg.kernel.pm.get_name(p) for p in cfg.kernel.pm.get_plugins()
    }

    class NotCallable:
        @hookimpl
        def hookagent_wrap_tool_call(self) -> Any:
            return 42

    bad = AgentConfig(
        plugins=[NotCallable()], autoload_plugins=False, state_store=InMemoryAgentStateStore()
    )
    with pytest.raises(HookContractError) as info2:
        bad.build()
    assert info2.value.hook == "hookagent_wrap_tool_call" and info2.value.plugin
