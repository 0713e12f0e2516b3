"""The agent: the call flow, gates, stores bound at build time, bad input, admin operations."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import pytest
from hookagent import (
    AgentConfig,
    AgentState,
    ConflictPolicy,
    InMemoryAgentStateStore,
    InvalidIdentifier,
    InvalidMessage,
    ModelError,
    Msg,
    RuntimeContext,
    StateNotPersistedWarning,
    StoreConfigurationError,
    ToolDefinitionError,
    VersionConflict,
    hookimpl,
)
from hookagent.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.anyio


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"value-{key}"


def echo_model() -> ScriptedModel:
    """Calls lookup once per user message, then answers with what the user said."""

    def step(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            return tool_call("lookup", key=len(request.messages))
        user = next(m for m in reversed(request.messages) if m.role == "user")
        return f"reply to {user.text}"

    return ScriptedModel(default=step)


def make(**kw: Any) -> AgentConfig:
    kw.setdefault("model", echo_model())
    kw.setdefault("tools", [lookup])
    kw.setdefault("state_store", InMemoryAgentStateStore())
    kw.setdefault("autoload_plugins", False)
    return AgentConfig(**kw)


def assert_consistent(state: AgentState) -> None:
    uses = [b.id for m in state.context for b in m.tool_uses]
    results = [b.id for m in state.context for b in m.tool_results]
    assert sorted(uses) == sorted(results), (uses, results)


async def test_call_persists_and_a_new_agent_resumes() -> None:
    config = make()
    ctx = RuntimeContext(user_id="alice", session_id="s1")
    async with config.build() as agent:
        reply = await agent.call("hello", ctx)
        assert reply.text == "reply to hello" and ctx.agent_state is None
    async with config.build() as other:
        await other.call("again", RuntimeContext(user_id="alice", session_id="s1"))
        state = await other.get_agent_state("alice", "s1")
    assert [m.role for m in state.context] == ["user", "assistant", "tool", "assistant"] * 2
    assert state.context[2].tool_results[0].text == "value-1"
    assert_consistent(state)


async def test_state_is_on_the_context_during_the_call_only() -> None:
    seen: list[Any] = []

    def peek(ctx: RuntimeContext) -> str:
        """Peek at the call's state."""
        assert ctx.agent_state is not None
        seen.append(
            (ctx.agent_state.user_id, ctx.agent_state.session_id, len(ctx.agent_state.context))
        )
        return "ok"

    model = ScriptedModel([tool_call("peek"), "done"])
    async with make(model=model, tools=[peek]).build() as agent:
        ctx = RuntimeContext(user_id="bob", session_id="x")
        await agent.call("hi", ctx)
    assert seen == [("bob", "x", 2)] and ctx.agent_state is None
    assert "ctx" not in str(model.requests[0].tools[0].parameters)


async def test_sync_twin_from_a_plain_script() -> None:
    config = make()
    agent = config.build()

    def script() -> tuple[str, int]:
        reply = agent.call_sync("sync", RuntimeContext(user_id="u", session_id="s"))
        state = agent.get_agent_state_sync("u", "s")
        assert agent.clear_context_sync("u", "s")
        return reply.text, len(state.context)

    assert await anyio.to_thread.run_sync(script) == ("reply to sync", 4)
    config.kernel.close_portal()


async def test_default_session_and_anonymous_user() -> None:
    async with make(default_session_id="main").build() as agent:
        await agent.call("anon")
        state = await agent.get_agent_state()
    assert state.session_id == "main" and state.user_id == "" and len(state.context) == 4


async def test_24_concurrent_calls_on_one_session_lose_nothing_in_fifo_order() -> None:
    config = make()
    order: list[int] = []

    async def one(i: int) -> None:
        agent = config.build()  # one agent per request, as a service would
        await agent.call(f"m{i}", RuntimeContext(user_id="u", session_id="shared"))
        order.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(24):
            tg.start_soon(one, i)
            await anyio.sleep(0)  # arrival order = i
    state = await config.build().get_agent_state("u", "shared")
    users = [m.text for m in state.context if m.role == "user"]
    replies = [m.text for m in state.context if m.role == "assistant" and m.text]
    assert users == [f"m{i}" for i in range(24)]
    assert replies == [f"reply to m{i}" for i in range(24)]
    assert order == list(range(24))
    assert_consistent(state)


async def test_16_sessions_in_parallel_stay_isolated() -> None:
    config = make()
    running = 0
    peak = 0

    async def slow(key: int) -> str:
        """Slow lookup."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.05)
        running -= 1
        return "v"

    config = make(
        tools=[slow],
        model=ScriptedModel(
            default=lambda r: (
                tool_call("slow", key=1) if r.messages[-1].role == "user" else r.messages[0].text
            )
        ),
    )

    async def session(i: int) -> None:
        async with config.build() as agent:
            for turn in range(2):
                await agent.call(
                    f"s{i}-t{turn}", RuntimeContext(user_id=f"user{i % 4}", session_id=f"s{i}")
                )

    async with anyio.create_task_group() as tg:
        for i in range(16):
            tg.start_soon(session, i)
    assert peak > 1  # different sessions really ran at the same time
    agent = config.build()
    for i in range(16):
        state = await agent.get_agent_state(f"user{i % 4}", f"s{i}")
        assert [m.text for m in state.context if m.role == "user"] == [f"s{i}-t0", f"s{i}-t1"]
        assert state.user_id == f"user{i % 4}" and state.session_id == f"s{i}"


async def test_reload_each_call_sees_external_changes() -> None:
    store = InMemoryAgentStateStore()
    config = make(state_store=store)
    async with config.build() as agent:
        await agent.call("one", RuntimeContext(user_id="u", session_id="s"))
        got = await store.get_versioned("u", "s")
        assert got.state is not None
        got.state.summary = "edited elsewhere"
        await store.save_if_version("u", "s", got.state, got.version)
        await agent.call("two", RuntimeContext(user_id="u", session_id="s"))
    state = await config.build().get_agent_state("u", "s")
    assert state.summary == "edited elsewhere" and len(state.context) == 8


async def test_slot_cache_when_not_reloading() -> None:
    store = InMemoryAgentStateStore()
    model = echo_model()
    async with make(state_store=store, model=model, reload_each_call=False).build() as agent:
        await agent.call("one", RuntimeContext(user_id="u", session_id="s"))
        await store.delete("u", "s")  # the cache does not see it: the next save conflicts
        with pytest.raises(VersionConflict):
            await agent.call("two", RuntimeContext(user_id="u", session_id="s"))


async def test_conflict_policies() -> None:
    async def racing(policy: ConflictPolicy) -> AgentState:
        store = InMemoryAgentStateStore()

        def step(request: Any) -> Any:
            return "done"

        async def sneak(ctx: RuntimeContext) -> str:
            """Write behind the agent's back."""
            got = await store.get_versioned("u", "s")
            state = got.state or AgentState("s", "u")
            state.context.append(Msg.user("from elsewhere"))
            await store.save_if_version("u", "s", state, got.version)
            return "ok"

        model = ScriptedModel([tool_call("sneak"), "done"])
        config = make(state_store=store, model=model, tools=[sneak], conflict_policy=policy)
        async with config.build() as agent:
            await agent.call("mine", RuntimeContext(user_id="u", session_id="s"))
        return await config.build().get_agent_state("u", "s")

    with pytest.raises(
        VersionConflict, match=r"user_id='u' session_id='s' key='agent_state': expected version 0"
    ):
        await racing(ConflictPolicy.FAIL)
    overwritten = await racing(ConflictPolicy.OVERWRITE)
    assert [m.text for m in overwritten.context if m.role == "user"] == ["mine"]
    merged = await racing(ConflictPolicy.APPEND_MERGE)
    assert [m.text for m in merged.context if m.role == "user"] == ["from elsewhere", "mine"]
    assert_consistent(merged)


async def test_store_url_and_default_binding() -> None:
    with pytest.raises(StoreConfigurationError, match="no store plugin serves 'nope' URLs"):
        AgentConfig(state_store="nope://x", autoload_plugins=False).build()

    made: list[str] = []

    class StorePlugin:
        @hookimpl
        def hookagent_register_state_stores(self, register: Any) -> None:
            register("mem", lambda url, **opts: made.append(url) or InMemoryAgentStateStore())

    config = AgentConfig(state_store="mem://x", plugins=[StorePlugin()], autoload_plugins=False)
    assert isinstance(await config.build().kernel.store(), InMemoryAgentStateStore)
    assert made == ["mem://x"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        AgentConfig(autoload_plugins=False).build()
    assert any(issubclass(w.category, StateNotPersistedWarning) for w in caught)

    class DefaultStore:
        @hookimpl
        def hookagent_default_state_store(self, agent_id: str) -> Any:
            made.append(f"default:{agent_id}")
            return InMemoryAgentStateStore()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AgentConfig(
            name="x", agent_id="bot-1", plugins=[DefaultStore()], autoload_plugins=False
        ).build()
    assert made[-1] == "default:bot-1"
    # installing a store plugin never rebinds an explicit store
    explicit = InMemoryAgentStateStore()
    config = AgentConfig(
        state_store=explicit, plugins=[DefaultStore(), StorePlugin()], autoload_plugins=False
    )
    assert await config.build().kernel.store() is explicit


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [[], (), 42, b"bytes", [Msg.user("ok"), 3], None, {"role": "user"}])
async def test_bad_messages_are_refused(bad: Any) -> None:
    async with make().build() as agent:
        with pytest.raises(InvalidMessage):
            await agent.call(bad, RuntimeContext(user_id="u", session_id="s"))
        assert not await (await agent.kernel.store()).exists("u", "s")


async def test_bad_ids_are_refused() -> None:
    async with make().build() as agent:
        for ctx in (
            RuntimeContext(user_id="u", session_id="a\x00b"),
            RuntimeContext(user_id="x" * 300),
        ):
            with pytest.raises(InvalidIdentifier):
                await agent.call("hi", ctx)


@pytest.mark.parametrize(
    "garbage",
    [ValueError("model exploded"), lambda r: 42, lambda r: Msg.user("wrong role")],
    ids=["raises", "not-a-response", "wrong-role"],
)
async def test_model_failures_save_the_input_only(garbage: Any) -> None:
    store = InMemoryAgentStateStore()
    model = ScriptedModel([tool_call("lookup", key=1), garbage])
    async with make(model=model, state_store=store).build() as agent:
        with pytest.raises(ModelError):
            await agent.call("hello", RuntimeContext(user_id="u", session_id="s"))
        state = await agent.get_agent_state("u", "s")
    assert [m.text for m in state.context] == ["hello"]
    assert_consistent(state)


async def test_tool_problems_are_error_results_the_model_sees() -> None:
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    def unserialisable() -> object:
        """Returns something that is not JSON."""
        return object()

    model = ScriptedModel(
        [
            Msg.assistant(
                [
                    *tool_call("boom").content,
                    *tool_call("unserialisable").content,
                    *tool_call("nope").content,
                    *tool_call("lookup", key="not-an-int").content,
                    *tool_call("lookup", key=1, extra=True).content,
                    *tool_call("lookup").content,
                ]
            ),
            "all handled",
        ]
    )
    async with make(model=model, tools=[lookup, boom, unserialisable]).build() as agent:
        reply = await agent.call("go", RuntimeContext(user_id="u", session_id="s"))
        state = await agent.get_agent_state("u", "s")
    assert reply.text == "all handled"
    results = model.requests[1].messages[-1].tool_results
    assert [r.state for r in results] == ["error"] * 6
    texts = [r.text for r in results]
    assert "RuntimeError: disk on fire" in texts[0]
    assert "not JSON" in texts[1]
    assert "unknown tool 'nope'" in texts[2] and "lookup" in texts[2]
    assert "key: expected integer" in texts[3]
    assert "unknown argument(s) ['extra']" in texts[4]
    assert "missing required argument(s) ['key']" in texts[5]
    assert_consistent(state)


async def test_iteration_cap_ends_the_turn_with_a_max_iterations_reply() -> None:
    model = ScriptedModel(default=lambda r: tool_call("lookup", key=1))
    async with make(model=model, max_iterations=3).build() as agent:
        reply = await agent.call("loop forever", RuntimeContext(user_id="u", session_id="s"))
        state = await agent.get_agent_state("u", "s")
    assert reply.metadata["generate_reason"] == "MAX_ITERATIONS" and "3 iterations" in reply.text
    assert len(model.requests) == 3
    # the three steps are kept (their tools ran), each with its result, then the stop reply
    assert [m.role for m in state.context] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert state.context[-1] == reply
    assert_consistent(state)


async def test_save_error_never_masks_the_original_error() -> None:
    class FailingSaves(InMemoryAgentStateStore):
        async def save_if_version(self, *a: Any, **kw: Any) -> int:
            raise OSError("store is down")

    model = ScriptedModel([ValueError("model exploded")])
    async with make(model=model, state_store=FailingSaves()).build() as agent:
        with pytest.raises(ModelError) as info:
            await agent.call("hello", RuntimeContext(user_id="u", session_id="s"))
    assert "store is down" in "".join(info.value.__notes__)
    assert isinstance(info.value.save_error, OSError)  # type: ignore[attr-defined]


async def test_duplicate_tools_are_refused() -> None:
    class Dup:
        @hookimpl
        def hookagent_register_tools(self, register: Any) -> None:
            register(lookup)

    with pytest.raises(ToolDefinitionError, match="registered twice"):
        AgentConfig(
            tools=[lookup],
            plugins=[Dup()],
            autoload_plugins=False,
            state_store=InMemoryAgentStateStore(),
        ).build()


async def test_plugin_tools_are_opt_in_by_group() -> None:
    class Tools:
        @hookimpl
        def hookagent_register_tools(self, register: Any) -> None:
            register(lookup, name="plugin_lookup", group="lookups")

    def names(config: AgentConfig, activated: tuple[str, ...] = ()) -> list[str]:
        return sorted(config.build().kernel.enabled_tools(activated)[0])

    base = dict(plugins=[Tools()], autoload_plugins=False, state_store=InMemoryAgentStateStore())
    assert names(AgentConfig(**base)) == []  # type: ignore[arg-type]
    assert names(AgentConfig(**base), ("lookups",)) == ["plugin_lookup"]  # type: ignore[arg-type]
    assert names(AgentConfig(tool_groups=["lookups"], **base)) == ["plugin_lookup"]  # type: ignore[arg-type]
    assert names(AgentConfig(tool_groups=["*"], **base)) == ["plugin_lookup"]  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- admin


async def test_clear_context_keeps_other_sections() -> None:
    config = make()
    async with config.build() as agent:
        await agent.call("hi", RuntimeContext(user_id="u", session_id="s"))

        def setup(state: AgentState) -> None:
            state.summary = "old summary"
            state.tool_context.activated_groups.append("fs")
            state.put_section("plan_mode_context", {"plan_active": True})
            state.put_section("permission_context", {"mode": "explore"})
            state.put_section("tasks_context", {"tasks": [], "revision": 7})
            state.extensions["plugin"] = {"x": 1}

        assert await agent.update_agent_state("u", "setup", setup, session_id="s")
        assert await agent.clear_context(RuntimeContext(user_id="u", session_id="s"))
        state = await agent.get_agent_state("u", "s")
        assert len(state.context) == 0 and state.summary is None
        assert state.tool_context.activated_groups == ["fs"]
        assert state.extensions["plan_mode_context"] == {"plan_active": True}
        assert state.extensions["permission_context"] == {"mode": "explore"}
        assert state.extensions["tasks_context"]["revision"] == 7
        assert state.extensions["plugin"] == {"x": 1}
        assert [e["reason"] for e in state.extensions["admin_log"]] == ["setup", "clear_context"]
        assert not await agent.clear_context("u", "unknown")
        assert not await (await agent.kernel.store()).exists("u", "unknown")
        await agent.call("fresh start", RuntimeContext(user_id="u", session_id="s"))
        assert (
            next(m.text for m in (await agent.get_agent_state("u", "s")).context) == "fresh start"
        )


async def test_admin_waits_for_the_running_call_and_does_not_cancel_it() -> None:
    release = anyio.Event()

    async def wait() -> str:
        """Wait for the test."""
        await release.wait()
        return "released"

    model = ScriptedModel([tool_call("wait"), "finished"])
    config = make(model=model, tools=[wait])
    agent = config.build()
    results: list[str] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            results.append(
                (await agent.call("long", RuntimeContext(user_id="u", session_id="s"))).text
            )

        async def clear() -> None:
            await anyio.sleep(0.05)
            results.append(f"cleared={await agent.clear_context('u', 's')}")

        tg.start_soon(call)
        tg.start_soon(clear)
        await anyio.sleep(0.2)
        release.set()
    assert results == ["finished", "cleared=True"]
    assert len((await agent.get_agent_state("u", "s")).context) == 0


async def test_gate_timeout_gives_session_busy_and_leaves_state_alone() -> None:
    from hookagent import SessionBusy

    release = anyio.Event()

    async def hold() -> str:
        """Hold the session."""
        await release.wait()
        return "held"

    model = ScriptedModel(
        default=lambda r: tool_call("hold") if r.messages[-1].role == "user" else "done"
    )
    config = make(model=model, tools=[hold], gate_timeout=0.1)
    outcomes: list[str] = []

    async def call(text: str) -> None:
        try:
            outcomes.append(
                (await config.build().call(text, RuntimeContext(user_id="u", session_id="s"))).text
            )
        except SessionBusy as exc:
            outcomes.append(f"busy: {exc}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "first")
        await anyio.sleep(0.02)
        tg.start_soon(call, "second")
        await anyio.sleep(0.3)
        release.set()
    assert outcomes[0].startswith("busy: session user_id='u' session_id='s' stayed busy for 0.1s")
    assert outcomes[1] == "done"
    state = await config.build().get_agent_state("u", "s")
    assert [m.text for m in state.context if m.role == "user"] == ["first"]
    # the gate is free again
    assert (
        await config.build().call("third", RuntimeContext(user_id="u", session_id="s"))
    ).text == "done"
